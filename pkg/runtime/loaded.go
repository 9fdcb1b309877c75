package runtime

import "github.com/hoster-dev/hoster/pkg/game"

// Loaded reports whether domain/name is a game that loaded and serves: its
// page and files are served only then.
func (rt *Runtime) Loaded(domain, name string) bool { return rt.lookup(domain, name) != nil }

// Config is the configuration of domain/name's current version; ok is
// false when it is not a loaded game.
func (rt *Runtime) Config(domain, name string) (cfg game.Config, ok bool) {
	g := rt.lookup(domain, name)
	if g == nil {
		return game.Config{}, false
	}
	return g.current().cfg, true
}

// Instances is how many instances run now, of every game.
func (rt *Runtime) Instances() int {
	n := 0
	for _, g := range rt.loadedGames() {
		g.mu.Lock()
		n += len(g.instances)
		g.mu.Unlock()
	}
	return n
}
