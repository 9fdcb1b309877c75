package runtime

import (
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
)

//go:embed prelude.js
var preludeSrc string

var prelude = goja.MustCompile("hoster-prelude.js", preludeSrc, false)

// maxCatchUp is how many steps behind schedule an instance may fall before
// its schedule restarts from now instead of bursting ticks to catch up.
const maxCatchUp = 5

// Instance is one running copy of a game.
type Instance struct {
	id     string
	rt     *Runtime
	domain string
	name   string
	cfg    game.Config
	cmds   map[string]game.Args
	prog   *goja.Program
	log    *slog.Logger

	mu        sync.Mutex
	events    []event
	seats     int              // players placed here, connected or within their resume grace
	conns     map[string]*conn // connected players by id
	nextID    int
	stopping  bool
	empty     *time.Timer
	upgradeTo *Game // new code to move to before the next tick
	tel       counters
	logs      logLimit // instance.log's rate

	quit chan struct{}
	done chan struct{}
}

// event is a change queued for the next tick, applied in arrival order.
type event struct {
	kind   string // join, leave, resume, cmd
	player string
	params map[string]string
	name   string
	args   json.RawMessage
	conn   *conn // join and resume: who to welcome
	seat   *seat
}

func newID() string {
	b := make([]byte, api.IDBytes)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// place puts a new player in the fullest live instance with room, or a new
// instance, and reserves the seat so capacity can never be exceeded.
func (rt *Runtime) place(g *Game) *Instance {
	g.mu.Lock()
	defer g.mu.Unlock()
	var best *Instance
	for _, in := range g.instances {
		in.mu.Lock()
		ok := !in.stopping && in.seats < in.cfg.Capacity
		if ok && (best == nil || in.seats > best.seats) {
			best = in
		}
		in.mu.Unlock()
	}
	if best == nil {
		best = &Instance{id: newID(), rt: rt, domain: g.Domain, name: g.Name, cfg: g.cfg, cmds: g.commands, prog: g.program,
			conns: map[string]*conn{}, quit: make(chan struct{}), done: make(chan struct{})}
		best.log = rt.log.With("game", g.Key(), "instance", best.id)
		best.tel.reset()
		g.instances[best.id] = best
		go best.run()
	}
	best.mu.Lock()
	best.seats++
	if best.empty != nil {
		best.empty.Stop()
		best.empty = nil
	}
	best.mu.Unlock()
	return best
}

func (in *Instance) enqueue(ev event) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stopping {
		return false
	}
	in.events = append(in.events, ev)
	return true
}

// release frees a seat; an instance left empty is disposed after EmptyGrace.
func (in *Instance) release() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.seats--
	if in.seats == 0 && !in.stopping {
		in.empty = time.AfterFunc(in.rt.o.EmptyGrace, func() {
			in.mu.Lock()
			idle := in.seats == 0
			in.mu.Unlock()
			if idle {
				in.stop(1001, "the instance is empty")
			}
		})
	}
}

// stop closes every connection with code and reason and ends the instance.
func (in *Instance) stop(code int, reason string) {
	in.mu.Lock()
	if in.stopping {
		in.mu.Unlock()
		return
	}
	in.stopping = true
	conns := make([]*conn, 0, len(in.conns))
	for _, c := range in.conns {
		conns = append(conns, c)
	}
	for _, ev := range in.events { // joined but not yet welcomed
		if ev.conn != nil {
			conns = append(conns, ev.conn)
		}
	}
	in.events = nil
	in.mu.Unlock()
	in.reportDropped()
	close(in.quit)
	for _, c := range conns {
		c.closeWith(code, reason)
	}
	if g := in.rt.lookup(in.domain, in.name); g != nil {
		g.mu.Lock()
		if g.instances[in.id] == in {
			delete(g.instances, in.id)
		}
		g.mu.Unlock()
	}
	in.rt.dropSeats(in)
}

// vm is an instance's JavaScript side.
type vm struct {
	rt                              *goja.Runtime
	init, tick, send, export, adopt goja.Callable
	sizes, counts, snapshot         goja.Callable
	budget                          time.Duration
}

// call runs fn under the hook budget: an overrun interrupts it.
func (v *vm) call(fn goja.Callable, args ...goja.Value) (goja.Value, error) {
	fire, end := armInterrupt(v.rt, "a hook ran longer than "+v.budget.String())
	timer := time.AfterFunc(v.budget, fire)
	res, err := fn(goja.Undefined(), args...)
	end()
	timer.Stop()
	return res, err
}

// armInterrupt starts the budget of one call into r: fire interrupts the
// call if it is still running; end marks it over and clears any interrupt.
// A timer's fire that runs late, after end (a busy machine may run a timer's
// function well after it expired), does nothing: it must never interrupt
// the next call.
func armInterrupt(r *goja.Runtime, reason string) (fire, end func()) {
	var mu sync.Mutex
	running := true
	fire = func() {
		mu.Lock()
		defer mu.Unlock()
		if running {
			r.Interrupt(reason)
		}
	}
	end = func() {
		mu.Lock()
		running = false
		mu.Unlock()
		r.ClearInterrupt()
	}
	return fire, end
}

// newVM loads prog and the prelude in a fresh goja runtime.
func (in *Instance) newVM(prog *goja.Program) (*vm, error) {
	r := goja.New()
	r.SetMaxCallStackSize(4096)
	v := &vm{rt: r, budget: in.rt.o.HookBudget}
	r.Set("__log", in.gameLog)
	fire, end := armInterrupt(r, "loading ran longer than "+v.budget.String())
	timer := time.AfterFunc(v.budget, fire)
	_, err := r.RunProgram(prog)
	if err == nil {
		_, err = r.RunProgram(prelude)
	}
	end()
	timer.Stop()
	if err != nil {
		return nil, err
	}
	var ok [8]bool
	v.init, ok[0] = goja.AssertFunction(r.Get("__init"))
	v.tick, ok[1] = goja.AssertFunction(r.Get("__tick"))
	v.send, ok[2] = goja.AssertFunction(r.Get("__send"))
	v.export, ok[3] = goja.AssertFunction(r.Get("__export"))
	v.adopt, ok[4] = goja.AssertFunction(r.Get("__adopt"))
	v.sizes, ok[5] = goja.AssertFunction(r.Get("__sizes"))
	v.counts, ok[6] = goja.AssertFunction(r.Get("__takeCounts"))
	v.snapshot, ok[7] = goja.AssertFunction(r.Get("__snapshot"))
	if ok != [8]bool{true, true, true, true, true, true, true, true} {
		return nil, errors.New("the runtime prelude is broken")
	}
	return v, nil
}

func (in *Instance) start() (*vm, error) {
	v, err := in.newVM(in.prog)
	if err != nil {
		return nil, err
	}
	if _, err := v.call(v.init, v.rt.ToValue(in.id)); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	return v, nil
}

// upgrade moves the instance to new code between two ticks: the old code
// serialises (or hands over its state object), the new code restores. On any
// failure the old code keeps running and nobody notices but the log.
func (in *Instance) upgrade(old *vm, g *Game) (*vm, error) {
	// The old runtime's delta counts move to Go before it is dropped.
	a, ch, gn := in.takeDeltaCounts(old)
	in.mu.Lock()
	in.tel.delta.Appeared += a
	in.tel.delta.Changed += ch
	in.tel.delta.Gone += gn
	in.mu.Unlock()
	dump, err := old.call(old.export)
	if err != nil {
		return old, fmt.Errorf("serialising with the old code: %w", err)
	}
	v, err := in.newVM(g.program)
	if err != nil {
		return old, fmt.Errorf("loading the new code: %w", err)
	}
	if _, err := v.call(v.adopt, dump); err != nil {
		return old, fmt.Errorf("restoring with the new code: %w", err)
	}
	in.mu.Lock()
	in.prog, in.cfg, in.cmds = g.program, g.cfg, g.commands
	in.mu.Unlock()
	return v, nil
}

// run is the instance's goroutine: the fixed-step tick loop.
func (in *Instance) run() {
	defer close(in.done)
	v, err := in.start()
	if err != nil {
		in.fail(err)
		return
	}
	in.mu.Lock()
	step := time.Second / time.Duration(in.cfg.TickRate)
	sendStep := time.Second / time.Duration(in.cfg.SendRate)
	in.mu.Unlock()
	start := time.Now()
	last, nextSend := start, start
	clock := in.rt.now
	nextStats := clock().Add(in.rt.o.GamelogInterval)
	hour := clock().UTC().Truncate(time.Hour)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for n := int64(1); ; n++ {
		target := start.Add(time.Duration(n) * step)
		if wait := time.Until(target); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-in.quit:
				return
			}
		} else if -wait > maxCatchUp*step {
			start, n = time.Now(), 0 // stalled: restart the schedule, no burst
			if observe := in.rt.o.Observe; observe != nil {
				observe("stall", -wait)
			}
		}
		select {
		case <-in.quit:
			return
		default:
		}
		now := time.Now()
		dt := now.Sub(last).Seconds()
		last = now

		in.mu.Lock()
		events := in.events
		in.events = nil
		next := in.upgradeTo
		in.upgradeTo = nil
		in.mu.Unlock()
		if next != nil {
			nv, err := in.upgrade(v, next)
			if err != nil {
				in.log.Warn("hot reload failed; the old code keeps running", "err", err)
			} else {
				v = nv
				in.log.Info("moved to the new code")
				in.mu.Lock()
				step = time.Second / time.Duration(in.cfg.TickRate)
				sendStep = time.Second / time.Duration(in.cfg.SendRate)
				in.mu.Unlock()
				start, n, nextSend = now, 0, now
			}
		}
		payload, joins := encodeEvents(events)
		if _, err := v.call(v.tick, v.rt.ToValue(dt), v.rt.ToValue(now.UnixMilli()), v.rt.ToValue(payload)); err != nil {
			in.fail(err, joins...) // the players this tick was to welcome go too
			return
		}
		if observe := in.rt.o.Observe; observe != nil {
			observe("tick", time.Since(now))
		}
		in.count(events, now)
		for _, ev := range joins {
			in.welcome(ev)
		}
		if !now.Before(nextSend) {
			nextSend = nextSend.Add(sendStep)
			if nextSend.Before(now) {
				nextSend = now.Add(sendStep)
			}
			sent := time.Now()
			if err := in.sendRound(v); err != nil {
				in.fail(err)
				return
			}
			if observe := in.rt.o.Observe; observe != nil {
				observe("send", time.Since(sent))
			}
		}
		if t := clock(); !t.Before(nextStats) {
			in.statsLine(v, t)
			nextStats = nextStats.Add(in.rt.o.GamelogInterval)
			if nextStats.Before(t) {
				nextStats = t.Add(in.rt.o.GamelogInterval)
			}
		}
		if t := clock(); t.UTC().Truncate(time.Hour).After(hour) {
			hour = t.UTC().Truncate(time.Hour)
			in.snapshotLine(v, t)
		}
	}
}

func encodeEvents(events []event) (string, []event) {
	list := make([]any, 0, len(events))
	var joins []event
	for _, ev := range events {
		switch ev.kind {
		case "join":
			list = append(list, []any{"join", ev.player, ev.params})
			joins = append(joins, ev)
		case "leave":
			list = append(list, []any{"leave", ev.player})
		case "resume":
			list = append(list, []any{"resume", ev.player})
			joins = append(joins, ev)
		case "cmd":
			list = append(list, []any{"cmd", ev.player, ev.name, ev.args})
		}
	}
	b, _ := json.Marshal(list)
	return string(b), joins
}

// welcome attaches a joined (or resumed) player's connection and greets it.
func (in *Instance) welcome(ev event) {
	in.mu.Lock()
	if old := in.conns[ev.player]; old != nil && old != ev.conn {
		defer old.closeWith(4000, "replaced by a newer connection of the same player")
	}
	in.conns[ev.player] = ev.conn
	in.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{
		"t": "welcome", "game": in.domain + "/" + in.name, "instance": in.id, "player": ev.player,
		"tickRate": in.cfg.TickRate, "sendRate": in.cfg.SendRate, "resume": ev.seat.token,
	})
	ev.conn.enqueue(msg, false)
}

// sendRound gives every ready viewer its delta.
func (in *Instance) sendRound(v *vm) error {
	in.mu.Lock()
	ready := make([]any, 0, len(in.conns))
	skipped := 0
	for id, c := range in.conns {
		switch c.state() {
		case connReady:
			ready = append(ready, id)
		case connBusy:
			skipped++
		}
	}
	in.mu.Unlock()
	if observe := in.rt.o.Observe; observe != nil {
		for range skipped {
			observe("skip", 0)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	res, err := v.call(v.send, v.rt.ToValue(ready))
	if err != nil {
		return err
	}
	out, _ := res.Export().([]any)
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := 0; i+1 < len(out); i += 2 {
		id, _ := out[i].(string)
		msg, _ := out[i+1].(string)
		if c := in.conns[id]; c != nil && c.enqueue([]byte(msg), true) {
			in.tel.updBytes.Sum += float64(len(msg))
			in.tel.updBytes.Count++
		}
	}
	return nil
}

// fail closes the instance after a hook threw or overran; other instances
// and games carry on. waiting are joins taken for the failed tick: neither
// welcomed nor queued any more, their connections are closed here.
func (in *Instance) fail(err error, waiting ...event) {
	in.log.Error("instance closed: a hook failed", "err", err)
	reason := "the game instance failed"
	var ex *goja.InterruptedError
	if errors.As(err, &ex) {
		reason = "the game instance was stopped: a hook ran too long"
	}
	in.stop(1011, reason)
	for _, ev := range waiting {
		if ev.conn != nil {
			ev.conn.closeWith(1011, reason)
		}
	}
}

// count adds applied joins and leaves to the interval's telemetry; a leave
// completes its session's playtime (a player still connected is not counted).
func (in *Instance) count(events []event, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, ev := range events {
		switch ev.kind {
		case "join":
			in.tel.arrivals++
		case "leave":
			in.tel.departures++
			if ev.seat != nil {
				in.tel.playtime.Sum += in.rt.now().Sub(ev.seat.joined).Seconds()
				in.tel.playtime.Count++
			}
		}
	}
}
