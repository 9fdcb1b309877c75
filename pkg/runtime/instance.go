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
)

//go:embed prelude.js
var preludeSrc string

// preludeName is the prelude's file name in stacks.
const preludeName = "hoster-prelude.js"

var prelude = goja.MustCompile(preludeName, preludeSrc, false)

//go:embed intrinsics.js
var intrinsicsSrc string

// intrinsicsName is the file name of the intrinsics in stacks.
const intrinsicsName = "hoster-intrinsics.js"

// intrinsics runs first in every game runtime, before the game's code: see
// intrinsics.js.
var intrinsics = goja.MustCompile(intrinsicsName, intrinsicsSrc, false)

// runtimeFile reports whether a stack's file is the runtime's own, not the
// game's.
func runtimeFile(name string) bool { return name == preludeName || name == intrinsicsName }

// Instance is one running copy of a game.
type Instance struct {
	id     string
	rt     *Runtime
	g      *Game
	domain string
	name   string
	log    *slog.Logger

	mu       sync.Mutex
	ver      *version // the code it runs; the tick loop moves it to g's current one
	events   []event
	seats    int              // players placed here, connected or within their resume grace
	conns    map[string]*conn // connected players by id
	nextID   int
	stopping bool
	locked   bool             // instance.lock(): takes no new player
	room     string           // the ?room= code it holds, "" for a public instance
	byPlayer map[string]*seat // the seat of each player placed here
	empty    stopper          // runs while it has no player: see release
	emptyDue bool             // it had no player for its emptyGrace: it ends at the end of its next tick
	tel      counters
	present  map[string]*seat  // the players whose arrival was counted and departure not yet
	params   map[string]string // the first player's, for create
	tables   json.RawMessage   // the compact encoding's field tables of the code it runs
	started  time.Time

	// For Overview and Inspect (inspect.go): the recent durations of ticks
	// and send rounds, and the Inspects waiting for the next tick.
	tickTimes, sendTimes durations
	inspects             []inspectRequest

	// pending holds messages from instance.send and broadcast until their
	// player's next update has been queued; only the instance goroutine
	// touches it (under mu, as conns is read with it).
	pending map[string][][]byte

	quit chan struct{}
	done chan struct{}
}

// event is a change queued for the next tick, applied in arrival order.
type event struct {
	kind   string // join, leave, drop (connection lost, seat held), resume, cmd
	player string
	params map[string]string
	name   string
	args   map[string]any // checked against args.json
	conn   *conn          // join and resume: who to welcome
	seat   *seat
}

func newID() string {
	b := make([]byte, api.IDBytes)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errNoPlace says why a player could not be placed.
type errNoPlace struct {
	code   int
	reason string
	bound  string // the bound reached (boundInstances, boundRooms), if that is why
}

func (e *errNoPlace) Error() string { return e.reason }

// place puts a new player in the fullest live public instance with room that
// is not locked, or a new instance, and reserves the seat so capacity can
// never be exceeded. With a room code it is the instance holding that code
// (started when there is none), which never takes players without it.
// params are the player's, given to create when an instance starts. No
// instance starts past the game's maxInstances, nor past the new instances
// addr (an addrKey; "" for none) may start in a minute: both are refused
// before any of the game's code runs.
//
// Taking a new room may ask the server's parent (Options.TakeRoom: a round
// trip over a worker's control socket), so it is done without the game's
// lock: joins that fit a running instance are not held behind it, and a
// socket the parent handed over with a room taken for it (grant) spends
// that one instead of asking. One join at a time starts an instance of a
// given room (g.starting); the others for that room wait for it, then look
// again.
func (rt *Runtime) place(g *Game, room string, params map[string]string, addr string, grant *roomGrant) (*Instance, error) {
	for {
		g.mu.Lock()
		best, live, err := rt.pick(g, room)
		switch {
		case err != nil:
			g.mu.Unlock()
			return nil, err
		case best != nil:
			seatIn(best)
			g.mu.Unlock()
			return best, nil
		}
		if limit := rt.maxInstances(g.current().cfg); live >= limit {
			g.mu.Unlock()
			return nil, &errNoPlace{code: 1013, reason: instancesReason(limit), bound: boundInstances}
		}
		if wait, ok := g.starting[room]; ok {
			g.mu.Unlock()
			<-wait
			continue
		}
		if g.starting == nil {
			g.starting = map[string]chan struct{}{}
		}
		started := make(chan struct{})
		g.starting[room] = started
		g.mu.Unlock()
		took := grant.take() || rt.TakeRoom(addr)
		g.mu.Lock()
		delete(g.starting, room)
		close(started)
		if !took {
			g.mu.Unlock()
			return nil, &errNoPlace{code: 1013, reason: roomsReason, bound: boundRooms}
		}
		in, err := rt.start(g, room, params)
		g.mu.Unlock()
		return in, err
	}
}

// pick is the instance of room a player joins (for "", the fullest one
// with a free seat), nil for none, and how many instances of g are live;
// an error for a room that is locked or full, or a removed game. g.mu is
// held.
func (rt *Runtime) pick(g *Game, room string) (best *Instance, live int, err error) {
	if g.removed {
		return nil, 0, &errNoPlace{code: 1001, reason: "the game was removed"}
	}
	for _, in := range g.instances {
		in.mu.Lock()
		if !in.stopping {
			live++
		}
		if !in.stopping && in.room == room {
			if room != "" {
				switch {
				case in.locked:
					in.mu.Unlock()
					return nil, 0, &errNoPlace{code: 1013, reason: "room " + room + " is locked"}
				case in.seats >= in.ver.cfg.Capacity:
					in.mu.Unlock()
					return nil, 0, &errNoPlace{code: 1013, reason: "room " + room + " is full"}
				}
				best = in
			} else if !in.locked && in.seats < in.ver.cfg.Capacity && (best == nil || in.seats > best.seats) {
				best = in
			}
		}
		in.mu.Unlock()
	}
	return best, live, nil
}

// start begins a new instance of room in g, with the player's seat, once
// its room was taken: unless, meanwhile, the game was removed or another
// room took the last instance it may run (the room taken is then spent).
// g.mu is held.
func (rt *Runtime) start(g *Game, room string, params map[string]string) (*Instance, error) {
	best, live, err := rt.pick(g, room)
	switch {
	case err != nil:
		return nil, err
	case best != nil: // a seat came free in the fullest public instance
		seatIn(best)
		return best, nil
	}
	if limit := rt.maxInstances(g.current().cfg); live >= limit {
		return nil, &errNoPlace{code: 1013, reason: instancesReason(limit), bound: boundInstances}
	}
	in := &Instance{id: newID(), rt: rt, g: g, domain: g.Domain, name: g.Name, ver: g.current(), room: room, params: params, started: rt.now(),
		conns: map[string]*conn{}, byPlayer: map[string]*seat{}, quit: make(chan struct{}), done: make(chan struct{})}
	in.log = rt.log.With("game", g.Key(), "instance", in.id)
	in.tel.reset()
	g.instances[in.id] = in
	if !rt.o.manual {
		rt.sched.add(in)
	}
	seatIn(in)
	return in, nil
}

// seatIn takes a seat of in for a joining player: an instance waiting to
// end for want of players no longer does.
func seatIn(in *Instance) {
	in.mu.Lock()
	in.seats++
	if in.empty != nil {
		in.empty.Stop()
		in.empty = nil
	}
	in.emptyDue = false
	in.mu.Unlock()
}

// version is the code the instance runs.
func (in *Instance) version() *version {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.ver
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

// release frees a seat; an instance left empty ends after its game's
// emptyGrace (Options.EmptyGrace replaces it in tests), at the end of the
// tick that follows, once the last leave has been applied (endIfEmpty):
// until then a player who comes finds its state as it was.
func (in *Instance) release() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.seats--
	if in.seats == 0 && !in.stopping {
		grace := in.rt.o.EmptyGrace
		if grace <= 0 {
			grace = time.Duration(in.ver.cfg.EmptyGrace * float64(time.Second))
		}
		in.empty = in.rt.o.clock.AfterFunc(grace, func() {
			in.mu.Lock()
			in.emptyDue = in.seats == 0
			in.mu.Unlock()
		})
	}
}

// endIfEmpty ends the instance if its emptyGrace ran out with no player
// coming and no event (the last leave) waiting for a tick; checked with the
// stop under in.mu, so that no player is placed between the check and the
// stop.
func (in *Instance) endIfEmpty() {
	in.stopWhen(func() bool { return in.emptyDue && in.seats == 0 && len(in.events) == 0 }, 1001, "the instance is empty")
}

// stop closes every connection with code and reason and ends the instance.
func (in *Instance) stop(code int, reason string) { in.stopWhen(nil, code, reason) }

// stopWhen is stop if ok (nil: always), called under in.mu, holds.
func (in *Instance) stopWhen(ok func() bool, code int, reason string) {
	in.mu.Lock()
	if in.stopping || (ok != nil && !ok()) {
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
	in.g.reportHeldBack(in.log)
	close(in.quit)
	in.rt.sched.hurry(in)
	for _, c := range conns {
		c.closeWith(code, reason)
	}
	in.g.mu.Lock()
	if in.g.instances[in.id] == in {
		delete(in.g.instances, in.id)
	}
	in.g.mu.Unlock()
	in.rt.dropSeats(in)
}

// vm is an instance's JavaScript side, and the engine that follows what
// its viewers were sent (engine.go), which moves with the instance to new
// code.
type vm struct {
	rt            *goja.Runtime
	export, adopt goja.Callable
	inspect       goja.Callable
	seesAll       goja.Callable // __sees
	hooks         hooks
	timers        []*gameTimer
	visible       goja.Callable // the game's visibility hook, nil for none
	visibleV      goja.Value    // the same, as a value
	pure          *pureHook     // the same, when Go evaluates it (purehook.go)
	inst          *goja.Object  // instance, as the last send round found it
	budget        time.Duration
	stuck         stuckWatch // what a call that ignores its interrupt gets
	eng           *engine
	scratch       roundScratch
	herrs         []hookErr // hook errors found by Go, for the instance to log
	now           int64     // the time of the last tick, in ms
	// enter is __js.enter, body the Go function it calls: nested runs
	// body's work, nestedErr is what that returned.
	enter     goja.Callable
	body      goja.Value
	work      func() error
	nestedErr error
}

// hookErr is a hook error found in Go: where, and a text as a thrown
// error's stack has it.
type hookErr struct{ where, text string }

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

// callerIn is the file:line of the innermost call in r that is the game's
// own code (not the prelude), "" when there is none.
func callerIn(r *goja.Runtime) string {
	for _, f := range r.CaptureCallStack(0, nil) {
		if pos := f.Position(); pos.Filename != "" && !runtimeFile(pos.Filename) && pos.Line > 0 {
			return fmt.Sprintf("%s:%d", pos.Filename, pos.Line)
		}
	}
	return ""
}

// newVM loads g's code and the prelude in a fresh goja runtime, its things
// kept by eng.
func (in *Instance) newVM(g *version, eng *engine) (*vm, error) {
	r := goja.New()
	r.SetMaxCallStackSize(4096)
	v := &vm{rt: r, budget: in.rt.o.HookBudget, stuck: in.rt.stuckWatch(), eng: eng}
	v.install()
	prog := g.program
	r.Set("__log", func(call goja.FunctionCall) goja.Value {
		msg := call.Argument(0).String()
		if ok, held := in.g.logAllowed(in.rt.now()); ok {
			in.log.Info("game log", "msg", msg, "at", callerIn(r), "heldBack", held)
		}
		return goja.Undefined()
	})
	// The game's code runs after the intrinsics and before the prelude,
	// which reads its registry; all of it, and finding the prelude's entry
	// points, under the budget.
	_, err := guarded(r, v.budget, v.stuck, "loading", func() (goja.Value, error) {
		for _, p := range []*goja.Program{intrinsics, prog, prelude} {
			if _, err := r.RunProgram(p); err != nil {
				return nil, err
			}
		}
		if err := v.entryPoints(); err != nil {
			return nil, err
		}
		v.findPure()
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	v.keepPure(g)
	return v, nil
}

// entryPoints finds the prelude's functions Go calls, and the game's
// visibility hook.
func (v *vm) entryPoints() error {
	for name, fn := range map[string]*goja.Callable{
		"__export": &v.export, "__adopt": &v.adopt, "__inspect": &v.inspect, "__sees": &v.seesAll,
	} {
		f, ok := goja.AssertFunction(v.rt.Get(name))
		if !ok {
			return errors.New("the runtime prelude is broken: " + name + " is not a function")
		}
		*fn = f
	}
	reg, _ := v.rt.Get("__hoster").(*goja.Object)
	if reg == nil {
		return errors.New("the registry is gone")
	}
	if err := v.findHooks(reg); err != nil {
		return err
	}
	if p, ok := reg.Get("player").(*goja.Object); ok {
		if v.visible, _ = goja.AssertFunction(p.Get("visible")); v.visible != nil {
			v.visibleV = p.Get("visible")
		}
	}
	return nil
}

// install gives the prelude the Go functions it calls: __thing(type) makes
// a thing, __wrap(type, object) one with object's properties, __things()
// an instance.players or instance.entities, and
// __view(op, id) follows a player's viewer (join, leave, resume).
func (v *vm) install() {
	r := v.rt
	r.Set("__thing", func(c goja.FunctionCall) goja.Value {
		_, o := v.newThing(v.eng.typeOf(c.Argument(0).String()))
		return o
	})
	r.Set("__wrap", func(c goja.FunctionCall) goja.Value {
		t, o := v.newThing(v.eng.typeOf(c.Argument(0).String()))
		if src, ok := c.Argument(1).(*goja.Object); ok {
			for _, k := range src.Keys() {
				t.Set(k, src.Get(k))
			}
		}
		return o
	})
	r.Set("__after", v.timerFunc(false))
	r.Set("__every", v.timerFunc(true))
	r.Set("__things", func(goja.FunctionCall) goja.Value {
		return r.NewDynamicObject(&thingMap{})
	})
	r.Set("__view", func(c goja.FunctionCall) goja.Value {
		id := c.Argument(1).String()
		switch c.Argument(0).String() {
		case "join":
			v.eng.join(id)
		case "leave":
			v.eng.leave(id)
		case "resume":
			v.eng.resume(id)
		}
		return goja.Undefined()
	})
}

// start loads the current version and runs create at now.
func (in *Instance) start(now time.Time) (*vm, error) {
	g := in.version()
	v, err := in.newVM(g, newEngine(g.schema, false))
	if err != nil {
		return nil, err
	}
	v.eng.visible = v.visible != nil
	if err := v.create(in.id, now.UnixMilli(), in.params); err != nil {
		return nil, err
	}
	in.takeHookErrs(v)
	tables := v.eng.tables()
	in.mu.Lock()
	in.tables = tables
	in.mu.Unlock()
	return v, nil
}

// upgrade moves the instance to new code between two ticks: the old code
// serialises (or hands over its state object), the new code restores. On any
// failure the old code keeps running and nobody notices but the log.
func (in *Instance) upgrade(old *vm, g *version, now time.Time) (*vm, error) {
	v, err := in.handOver(old, g, now)
	if err != nil {
		return old, err
	}
	tables := v.eng.tables()
	in.mu.Lock()
	in.ver = g
	in.tables = tables
	// Compact clients decode the updates from now on by the new tables.
	msg, _ := json.Marshal(map[string]any{"t": "types", "types": in.tables})
	for _, c := range in.conns {
		if c.compact {
			c.enqueue(msg, false)
		}
	}
	in.mu.Unlock()
	return v, nil
}

// handOver loads g's code with what old runs: the old code serialises (or
// hands over its state object), the new code restores, and the engine
// moves with its records refitted to the new fields. The new code gets a
// copy of the engine: the old code keeps its own should the move fail.
func (in *Instance) handOver(old *vm, g *version, now time.Time) (*vm, error) {
	dump, err := callAs(old, "serialising with the old code", asString, old.export)
	if err != nil {
		return nil, err
	}
	v, err := in.newVM(g, old.eng.clone())
	if err != nil {
		return nil, fmt.Errorf("loading the new code: %w", err)
	}
	v.eng.refit(g.schema, v.visible != nil)
	v.now = now.UnixMilli()
	_, err = v.call("restoring with the new code", v.adopt, v.rt.ToValue(dump), v.rt.ToValue(v.now))
	in.takeHookErrs(v)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// loop is an instance's tick loop between two ticks: its JavaScript side
// and what is due when.
type loop struct {
	v            *vm
	tried        *version  // the last version an upgrade to failed
	failingSince time.Time // since when every tick had a hook throw
	last         time.Time // the previous tick, for dt
	step         time.Duration
	sendStep     time.Duration
	nextSend     time.Time
	nextStats    time.Time
	hour         time.Time // of the last snapshot
	restart      bool      // the rates changed: the schedule starts again from this tick
}

// begin creates the instance's JavaScript side (create runs) at now.
func (in *Instance) begin(now time.Time) (*loop, error) {
	v, err := in.start(now)
	if err != nil {
		return nil, err
	}
	cfg := in.version().cfg
	return &loop{
		v: v, last: now, nextSend: now,
		step:      time.Second / time.Duration(cfg.TickRate),
		sendStep:  time.Second / time.Duration(cfg.SendRate),
		nextStats: in.rt.now().Add(in.rt.o.GamelogInterval),
		hour:      in.rt.now().UTC().Truncate(time.Hour),
	}, nil
}

// ended reports whether the instance has been stopped.
func (in *Instance) ended() bool {
	select {
	case <-in.quit:
		return true
	default:
		return false
	}
}

// step runs one tick at now, in order: the queued events and a pending
// move to new code, the tick hooks, the welcomes of players who joined, the
// hooks' requests; then, when due, a send round, a stats line and the hour's
// snapshot; last, the Inspects that were waiting, and the end of an
// instance whose emptyGrace ran out. It reports false when the instance
// failed or was closed; one that ended empty reports true (hoster test's
// clock goes on past it), and ended says so.
func (in *Instance) step(l *loop, now time.Time) bool {
	if in.ended() {
		return false
	}
	began := time.Now() // how long the tick takes is measured on the wall, whatever the schedule's clock
	dt := now.Sub(l.last).Seconds()
	l.last = now
	in.mu.Lock()
	events := in.events
	in.events = nil
	running := in.ver
	inspects := in.inspects
	in.inspects = nil
	in.mu.Unlock()
	in.moveToCurrent(l, running, now)
	joins := welcomes(events)
	res, err := l.v.tickAt(dt, now.UnixMilli(), events)
	in.takeHookErrs(l.v)
	if err != nil {
		in.fail(err, joins...) // the players this tick was to welcome go too
		return false
	}
	took := time.Since(began)
	in.timed(false, took)
	if observe := in.rt.o.Observe; observe != nil {
		observe("tick", took)
	}
	in.count(events)
	for _, ev := range joins {
		in.welcome(ev)
	}
	in.mu.Lock()
	for _, ev := range events {
		if ev.kind == "leave" {
			delete(in.pending, ev.player)
		}
	}
	in.mu.Unlock()
	ticking := in.apply(res)
	if in.ended() { // instance.close
		return false
	}
	if t := in.rt.now(); !ticking {
		l.failingSince = time.Time{}
	} else if l.failingSince.IsZero() {
		l.failingSince = t
	} else if t.Sub(l.failingSince) >= failingFor {
		in.fail(fmt.Errorf("its hooks threw in every tick for %s", failingFor))
		return false
	}
	if !now.Before(l.nextSend) {
		l.nextSend = l.nextSend.Add(l.sendStep)
		if l.nextSend.Before(now) {
			l.nextSend = now.Add(l.sendStep)
		}
		sent := time.Now()
		if err := in.sendRound(l.v); err != nil {
			in.fail(err)
			return false
		}
		took := time.Since(sent)
		in.timed(true, took)
		if observe := in.rt.o.Observe; observe != nil {
			observe("send", took)
		}
	}
	in.telemetry(l)
	in.answerInspects(l.v, inspects)
	in.endIfEmpty()
	return true
}

// moveToCurrent moves the instance to its game's current code if that
// changed since the last tick and has not failed to load here before.
func (in *Instance) moveToCurrent(l *loop, running *version, now time.Time) {
	next := in.g.current()
	if next == running || next == l.tried {
		return
	}
	nv, err := in.upgrade(l.v, next, now)
	if err != nil {
		l.tried = next
		in.log.Warn("hot reload failed; the old code keeps running", "err", err)
		return
	}
	l.v = nv
	in.log.Info("moved to the new code")
	l.step = time.Second / time.Duration(next.cfg.TickRate)
	l.sendStep = time.Second / time.Duration(next.cfg.SendRate)
	l.nextSend, l.restart = now, true
}

// telemetry writes the stats line and the hour's snapshot when they are due.
func (in *Instance) telemetry(l *loop) {
	t := in.rt.now()
	if !t.Before(l.nextStats) {
		in.statsLine(l.v, t, false)
		l.nextStats = l.nextStats.Add(in.rt.o.GamelogInterval)
		if l.nextStats.Before(t) {
			l.nextStats = t.Add(in.rt.o.GamelogInterval)
		}
	}
	if t.UTC().Truncate(time.Hour).After(l.hour) {
		l.hour = t.UTC().Truncate(time.Hour)
		in.snapshotLine(l.v, t)
	}
}

// welcomes are the joins and resumes among events, to welcome after the
// tick.
func welcomes(events []event) []event {
	var out []event
	for _, ev := range events {
		if ev.kind == "join" || ev.kind == "resume" {
			out = append(out, ev)
		}
	}
	return out
}

// welcome attaches a joined (or resumed) player's connection and greets it.
func (in *Instance) welcome(ev event) {
	in.mu.Lock()
	cfg := in.ver.cfg
	if old := in.conns[ev.player]; old != nil && old != ev.conn {
		defer old.closeWith(4002, "replaced by a newer connection of the same player")
	}
	in.conns[ev.player] = ev.conn
	tables := in.tables
	in.mu.Unlock()
	m := map[string]any{
		"t": "welcome", "game": in.domain + "/" + in.name, "instance": in.id, "player": ev.player,
		"tickRate": cfg.TickRate, "sendRate": cfg.SendRate, "resume": ev.seat.token,
	}
	if ev.conn.compact {
		m["types"] = tables
	}
	if in.room != "" {
		m["room"] = in.room
	}
	msg, _ := json.Marshal(m)
	ev.conn.enqueue(msg, false)
}

// sendRound gives every ready viewer its delta.
func (in *Instance) sendRound(v *vm) error {
	in.mu.Lock()
	ready := make([]readyViewer, 0, len(in.conns))
	skipped := 0
	for id, c := range in.conns {
		switch c.state() {
		case connReady:
			ready = append(ready, readyViewer{id: id, compact: c.compact})
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
	updates, err := guarded(v.rt, v.budget, v.stuck, "sending", func() ([]update, error) { return v.send(ready) })
	in.takeHookErrs(v)
	if err != nil {
		return err
	}
	in.mu.Lock()
	due := make([]*conn, 0, len(ready))
	for _, u := range updates {
		c := in.conns[u.viewer]
		if c == nil {
			continue
		}
		msg := u.msg
		if u.compact { // a compact update, framed here for this viewer
			msg = frameCompact(u.seq, u.msg, v.now, c.lastTime)
			c.lastTime = v.now
		}
		if c.add(outFrame{frameOp(msg), msg}, true) {
			in.tel.updBytes.Sum += float64(len(msg))
			in.tel.updBytes.Count++
		}
	}
	// Messages follow the update that reflects the tick that sent them.
	for _, rv := range ready {
		in.flushLocked(rv.id)
		if c := in.conns[rv.id]; c != nil {
			due = append(due, c)
		}
	}
	in.mu.Unlock()
	// Each viewer's update and messages go out in one write, from here when
	// its socket takes them at once.
	for _, c := range due {
		c.flush()
	}
	return nil
}

// takeHookErrs logs the hook errors Go found in v.
func (in *Instance) takeHookErrs(v *vm) {
	for _, h := range v.herrs {
		in.hookError(h.where, h.text)
	}
	v.herrs = v.herrs[:0]
}

// fail closes the instance after a hook threw or overran; other instances
// and games carry on. waiting are joins taken for the failed tick: neither
// welcomed nor queued any more, their connections are closed here.
func (in *Instance) fail(err error, waiting ...event) {
	msg, at, reason := err.Error(), "", "the game instance failed"
	var js *jsError
	if errors.As(err, &js) { // read under the budget: safe to print
		msg, at = js.msg, js.at
		if js.interrupted {
			reason = "the game instance was stopped: a hook ran too long"
		}
	}
	where := at
	if where == "" { // a value of the module's that Go could not read
		where = api.ServerModule
	}
	in.log.Error("instance closed: a hook failed", "err", msg, "at", where)
	in.g.keepError(HookError{Time: in.rt.now(), Instance: in.id, Hook: "instance", Error: "closed: " + msg, At: at})
	in.stop(1011, reason)
	for _, ev := range waiting {
		if ev.conn != nil {
			ev.conn.closeWith(1011, reason)
		}
	}
}

// count adds applied joins and leaves to the interval's telemetry; a leave
// completes its session's playtime (a player still connected is not counted).
func (in *Instance) count(events []event) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, ev := range events {
		switch ev.kind {
		case "join":
			in.tel.arrivals++
			if in.present == nil {
				in.present = map[string]*seat{}
			}
			in.present[ev.player] = ev.seat
			in.log.Debug("player joined", "player", ev.player)
		case "leave":
			delete(in.present, ev.player)
			in.log.Debug("player left", "player", ev.player)
			in.departLocked(ev.seat)
		}
	}
}

// departLocked counts a departure and, with its seat, its session's
// playtime. in.mu is held.
func (in *Instance) departLocked(s *seat) {
	in.tel.departures++
	if s != nil {
		in.tel.playtime.Sum += in.rt.now().Sub(s.joined).Seconds()
		in.tel.playtime.Count++
	}
}
