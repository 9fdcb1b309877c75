package runtime

import (
	"strings"
	"sync"
	"time"
)

// refusalEvery is how often one kind of refusal (a game and origin, a game
// at its instances' bound, an address at its bound) is logged: a page that
// keeps reconnecting, or a flood, is one line a minute, not one per attempt.
const refusalEvery = time.Minute

// refusals remembers when each kind of refusal was last logged.
type refusals struct {
	mu     sync.Mutex
	last   map[string]time.Time
	hidden map[string]int // refusals not logged since the last line
}

// refusedOrigin logs a socket refused because its Origin is not in the
// game's origins, with the allowed list, at most once per refusalEvery for
// each game and origin.
func (rt *Runtime) refusedOrigin(g *Game, origin string) {
	rt.refused("origin "+g.Key()+" "+origin, "socket refused: its Origin is not in the game's origins",
		"game", g.Key(), "origin", origin, "allowed", strings.Join(g.current().cfg.Origins, " "))
}

// refused logs msg with args for a socket refused, at most once per
// refusalEvery for key (the line counts the refusals of key not logged
// since, as alsoRefused).
func (rt *Runtime) refused(key, msg string, args ...any) {
	now := rt.now()
	r := &rt.refusals
	r.mu.Lock()
	if r.last == nil || len(r.last) > 10000 { // bounded against a flood of made-up origins or addresses
		r.last, r.hidden = map[string]time.Time{}, map[string]int{}
	}
	if t, ok := r.last[key]; ok && now.Sub(t) < refusalEvery {
		r.hidden[key]++
		r.mu.Unlock()
		return
	}
	r.last[key] = now
	hidden := r.hidden[key]
	delete(r.hidden, key)
	r.mu.Unlock()
	rt.log.Warn(msg, append(args, "alsoRefused", hidden)...)
}
