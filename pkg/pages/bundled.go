package pages

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
)

// bundled is what a game's pushed files say about the rest of its folder:
// the files that went into its hoster.server.js, which are the server's
// alone, and the public setting of its hoster-game.json, which may give the
// page some of them as well. It is read once per load of the game (a reload
// calls [Files.Forget]), never per request.
type bundled struct {
	private map[string]bool // lowercased: no spelling reaches one on a case-insensitive disk
	cfg     game.Config     // its Public only; zero when the file does not parse
}

// shows reports whether file may be served as far as the module goes.
func (b *bundled) shows(file string) bool {
	return !b.private[strings.ToLower(file)] || b.cfg.MadePublic(file)
}

// serves reports whether file of domain/game may be served: a public name
// (see [Public]) of a loaded game, and not one of the files its server
// module was bundled from, unless its public setting names it. Anything it
// cannot read is not served.
func (f *Files) serves(domain, name, file string) bool {
	if !Public(file) || !f.o.Loaded(domain, name) {
		return false
	}
	b, err := f.bundle(domain, name)
	return err == nil && b.shows(file)
}

// bundle returns what the game's folder says about its module, read once
// per load (per handle on the folder): a handle replaced meanwhile keeps
// what was read from the old one out of the cache.
func (f *Files) bundle(domain, name string) (*bundled, error) {
	key := domain + "/" + name
	f.mu.Lock()
	b := f.bundles[key]
	f.mu.Unlock()
	if b != nil {
		return b, nil
	}
	var err error
	for try := 0; try < 2; try++ {
		var root *os.Root
		if root, err = f.root(domain, name); err != nil {
			return nil, err
		}
		if b, err = readBundled(root); err == nil {
			f.mu.Lock()
			if f.roots[key] == root {
				f.bundles[key] = b
			}
			f.mu.Unlock()
			return b, nil
		}
		// A handle on a folder removed and made again, or closed by a
		// reload: once more on a fresh one.
		f.Forget(domain, name)
	}
	return nil, err
}

// readBundled reads the game's source map (or, without one, its module)
// and its hoster-game.json through root.
func readBundled(root *os.Root) (*bundled, error) {
	var module []byte
	sourceMap, err := root.ReadFile(api.ServerModuleMap)
	if errors.Is(err, fs.ErrNotExist) {
		// Pushed without a map (an older client): esbuild's module comments
		// name the bundled files.
		module, err = root.ReadFile(api.ServerModule)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading what %s was bundled from: %w", api.ServerModule, err)
	}
	b := &bundled{private: map[string]bool{}}
	for _, s := range game.ServerSources(module, sourceMap) {
		b.private[strings.ToLower(s)] = true
	}
	// A hoster-game.json that does not parse makes nothing public: the
	// runtime keeps the last good version, and its files stay private.
	if data, err := root.ReadFile(api.GameConfigFile); err == nil {
		if cfg, err := game.ParseConfig(data); err == nil {
			b.cfg = cfg
		}
	}
	return b, nil
}
