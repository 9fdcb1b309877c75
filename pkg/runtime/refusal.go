package runtime

import (
	"strings"
	"sync"
	"time"
)

// refusalEvery is how often one game and origin is logged as refused: a
// page that keeps reconnecting is one line a minute, not one per attempt.
const refusalEvery = time.Minute

// refusals remembers when each game and origin was last logged as refused.
type refusals struct {
	mu     sync.Mutex
	last   map[string]time.Time
	hidden map[string]int // refusals not logged since the last line
}

// refusedOrigin logs a socket refused because its Origin is not in the
// game's origins, with the allowed list, at most once per refusalEvery for
// each game and origin (the line counts the refusals not logged since).
func (rt *Runtime) refusedOrigin(g *Game, origin string) {
	key := g.Key() + " " + origin
	now := rt.now()
	r := &rt.refusals
	r.mu.Lock()
	if r.last == nil || len(r.last) > 10000 { // bounded against a flood of made-up origins
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
	rt.log.Warn("socket refused: its Origin is not in the game's origins", "game", g.Key(), "origin", origin,
		"allowed", strings.Join(g.current().cfg.Origins, " "), "alsoRefused", hidden)
}
