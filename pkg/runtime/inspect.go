package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// What the runtime knows of its games, read-only, for the dev playground
// (pkg/dev): Overview lists the games, their instances, players, tick and
// send timings and recent hook errors from Go's side alone; Inspect asks one
// instance, between two of its ticks and on its own goroutine, for its
// JavaScript state. Nothing here changes a game, and hoster-server serves
// none of it.

// ErrNoInstance is returned by Inspect for a game or instance that is not
// running.
var ErrNoInstance = errors.New("no such instance")

// keptErrors is how many recent hook errors a game keeps for Overview.
const keptErrors = 20

// keptTimings is how many recent ticks (and send rounds) an instance's
// timing statistics cover.
const keptTimings = 100

// GameOverview is one loaded game as Overview sees it.
type GameOverview struct {
	// Game is "<domain>/<game>".
	Game     string `json:"game"`
	Domain   string `json:"domain"`
	Name     string `json:"name"`
	TickRate int    `json:"tickRate"`
	SendRate int    `json:"sendRate"`
	Capacity int    `json:"capacity"`
	// Instances are the live instances, oldest first.
	Instances []InstanceOverview `json:"instances"`
	// Errors are the game's most recent hook errors (and instances closed
	// by a failed hook), oldest first, at most 20; an instance's stay after
	// it closed.
	Errors []HookError `json:"errors"`
}

// InstanceOverview is one live instance.
type InstanceOverview struct {
	ID      string    `json:"id"`
	Room    string    `json:"room,omitempty"` // its ?room= code; "" for a public instance
	Locked  bool      `json:"locked"`
	Started time.Time `json:"started"`
	// Seats counts the players placed here, connected or held for their
	// resume; Players lists them.
	Seats   int             `json:"seats"`
	Players []PlayerSummary `json:"players"`
	// Tick and Send time the last ticks and send rounds on the wall clock.
	Tick Timing `json:"tick"`
	Send Timing `json:"send"`
}

// PlayerSummary is one player of an instance.
type PlayerSummary struct {
	ID        string `json:"id"`
	Connected bool   `json:"connected"` // false until welcomed, and while its seat is held for a resume
}

// Timing summarises the last (up to 100) durations of a tick or send round.
type Timing struct {
	Count  int64   `json:"count"` // since the instance started
	LastMs float64 `json:"lastMs"`
	MeanMs float64 `json:"meanMs"`
	MaxMs  float64 `json:"maxMs"`
}

// HookError is a hook that threw, or an instance closed by a failed hook
// (Hook "instance").
type HookError struct {
	Time     time.Time `json:"time"`
	Instance string    `json:"instance"`
	Hook     string    `json:"hook"`
	Error    string    `json:"error"`
	At       string    `json:"at,omitempty"` // the author's file:line, when known
}

// durations keeps an instance's recent tick or send round durations,
// guarded by its mutex.
type durations struct {
	n    int64
	last time.Duration
	ring [keptTimings]time.Duration
}

func (d *durations) add(x time.Duration) {
	d.ring[d.n%keptTimings] = x
	d.n++
	d.last = x
}

func (d *durations) timing() Timing {
	t := Timing{Count: d.n, LastMs: ms(d.last)}
	kept := min(d.n, keptTimings)
	if kept == 0 {
		return t
	}
	var sum, top time.Duration
	for _, x := range d.ring[:kept] {
		sum += x
		top = max(top, x)
	}
	t.MeanMs, t.MaxMs = ms(sum/time.Duration(kept)), ms(top)
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timed records how long a tick or a send round took.
func (in *Instance) timed(send bool, d time.Duration) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if send {
		in.sendTimes.add(d)
	} else {
		in.tickTimes.add(d)
	}
}

// keepError remembers a hook error for Overview.
func (g *Game) keepError(e HookError) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.errs) == keptErrors {
		g.errs = append(g.errs[:0], g.errs[1:]...)
	}
	g.errs = append(g.errs, e)
}

// Overview lists the loaded games, sorted, with their live instances.
func (rt *Runtime) Overview() []GameOverview {
	games := rt.loadedGames()
	out := make([]GameOverview, 0, len(games))
	for _, g := range games {
		cfg := g.current().cfg
		o := GameOverview{Game: g.Key(), Domain: g.Domain, Name: g.Name,
			TickRate: cfg.TickRate, SendRate: cfg.SendRate, Capacity: cfg.Capacity, Instances: []InstanceOverview{}}
		g.mu.Lock()
		o.Errors = append([]HookError{}, g.errs...)
		g.mu.Unlock()
		for _, in := range g.snapshot() {
			if io, ok := in.overview(); ok {
				o.Instances = append(o.Instances, io)
			}
		}
		sort.Slice(o.Instances, func(i, j int) bool { return o.Instances[i].Started.Before(o.Instances[j].Started) })
		out = append(out, o)
	}
	return out
}

// overview is the instance's part of Overview; false once it is stopping.
func (in *Instance) overview() (InstanceOverview, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopping {
		return InstanceOverview{}, false
	}
	o := InstanceOverview{ID: in.id, Room: in.room, Locked: in.locked, Started: in.started, Seats: in.seats,
		Players: make([]PlayerSummary, 0, len(in.byPlayer)), Tick: in.tickTimes.timing(), Send: in.sendTimes.timing()}
	for id := range in.byPlayer {
		o.Players = append(o.Players, PlayerSummary{ID: id, Connected: in.conns[id] != nil})
	}
	sort.Slice(o.Players, func(i, j int) bool { return o.Players[i].ID < o.Players[j].ID })
	return o, true
}

// Inspection is an instance's JavaScript side as Inspect reads it.
type Inspection struct {
	// State, Players and Entities are instance.state, instance.players and
	// instance.entities as JSON; a part JSON cannot hold (a cycle) is
	// {"unreadable": reason}.
	State    json.RawMessage `json:"state"`
	Players  json.RawMessage `json:"players"`
	Entities json.RawMessage `json:"entities"`
	// View, when a player was asked for, is what that player's viewer was
	// last sent: round, the send round it last received (-1: none yet);
	// behind, how many rounds it is behind the instance; things, each thing
	// it knows ({type, f: fields}) with the values of the last send round;
	// private, its own private fields as last sent. null when the player
	// has no viewer.
	View json.RawMessage `json:"view,omitempty"`
}

// inspectRequest is an Inspect waiting for the instance's next tick.
type inspectRequest struct {
	player string
	reply  chan inspectReply
}

type inspectReply struct {
	res Inspection
	err error
}

// Inspect reads the JavaScript side of instance id of domain/game, and the
// view of player when it is not "": the instance answers after its next
// tick, on its own goroutine, so nothing races its hooks.
func (rt *Runtime) Inspect(ctx context.Context, domain, game, id, player string) (Inspection, error) {
	g := rt.lookup(domain, game)
	if g == nil {
		return Inspection{}, fmt.Errorf("inspecting %s/%s: %w", domain, game, ErrNoInstance)
	}
	g.mu.Lock()
	in := g.instances[id]
	g.mu.Unlock()
	req := inspectRequest{player: player, reply: make(chan inspectReply, 1)}
	if in == nil || !in.askInspect(req) {
		return Inspection{}, fmt.Errorf("inspecting instance %s of %s/%s: %w", id, domain, game, ErrNoInstance)
	}
	select {
	case r := <-req.reply:
		return r.res, r.err
	case <-in.quit:
		return Inspection{}, fmt.Errorf("inspecting instance %s of %s/%s: it closed: %w", id, domain, game, ErrNoInstance)
	case <-ctx.Done():
		return Inspection{}, fmt.Errorf("inspecting instance %s of %s/%s: %w", id, domain, game, ctx.Err())
	}
}

func (in *Instance) askInspect(req inspectRequest) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopping {
		return false
	}
	in.inspects = append(in.inspects, req)
	return true
}

// answerInspects answers the Inspects taken at the start of a tick, from
// the instance's goroutine once the tick is over.
func (in *Instance) answerInspects(v *vm, reqs []inspectRequest) {
	for _, req := range reqs {
		var r inspectReply
		res, err := callAs(v, "inspecting", asString, v.inspect)
		if err == nil {
			if req.player != "" {
				res += `,"view":` + string(v.viewOf(req.player))
			}
			err = json.Unmarshal([]byte(res+"}"), &r.res)
		}
		if err != nil {
			r.err = fmt.Errorf("inspecting instance %s: %w", in.id, err)
		}
		req.reply <- r
	}
}
