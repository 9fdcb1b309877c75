package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// TestGame is a game for `hoster test`: the game's real module in the real
// runtime (goja, the tick, commands validated against args.json, per-viewer
// deltas, hook errors contained, placement in instances and rooms, resume
// tokens and their grace) on a virtual clock that only Advance moves.
// Players are sockets without a network: what the server would write to
// them is kept, frame by frame.
//
// A TestGame is driven by one goroutine, the test's.
type TestGame struct {
	rt        *Runtime
	g         *Game
	clk       *virtualClock
	instances []*TestInstance // in the order they started
	players   []*TestPlayer
	logs      *lines
}

// TestInstance is one instance of a TestGame.
type TestInstance struct {
	tg *TestGame
	in *Instance
	l  *loop
	sl *slot // its place in the runtime's schedule
}

// TestPlayer is a player of a TestGame.
type TestPlayer struct {
	tg       *TestGame
	c        *conn
	s        *seat // nil when its join was refused
	dropped  bool  // its connection was dropped and not resumed
	messages []json.RawMessage
	sees     map[string]bool
}

// testEpoch is where a TestGame's virtual clock starts.
var testEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// NewTestGame loads the generated game in dir (<root>/<domain>/<game>);
// its first instance starts at the first Join, Advance or read of its data.
func NewTestGame(dir string) (*TestGame, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	tg := &TestGame{clk: &virtualClock{now: testEpoch}, logs: &lines{}}
	rt, err := New(Options{
		GamesRoot: filepath.Join(dir, "hoster-test-no-root"),
		Logger:    slog.New(tg.logs),
		// A test's own clock never runs out; the budget still stops an
		// endless loop in the game's code.
		HookBudget: 5 * time.Second,
		clock:      tg.clk,
		manual:     true,
	})
	if err != nil {
		return nil, err
	}
	domain, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
	rt.o.GamesRoot = filepath.Dir(filepath.Dir(dir))
	rt.Reload(domain, name)
	tg.rt, tg.g = rt, rt.lookup(domain, name)
	if tg.g == nil {
		rt.Shutdown(context.Background())
		return nil, fmt.Errorf("loading %s/%s: %s", domain, name, tg.logs.last())
	}
	return tg, nil
}

// first is the first instance, a public one started now (create runs with
// no params, and no seat is taken) when there is none yet.
func (tg *TestGame) first() (*TestInstance, error) {
	if len(tg.instances) > 0 {
		return tg.instances[0], nil
	}
	in, err := tg.rt.place(tg.g, "", nil, "", nil)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	in.seats-- // place reserved a seat for a player; there is none
	in.mu.Unlock()
	return tg.track(in)
}

// track starts in (create runs at the clock's now) if it is new to the
// test, and returns it.
func (tg *TestGame) track(in *Instance) (*TestInstance, error) {
	for _, ti := range tg.instances {
		if ti.in == in {
			return ti, nil
		}
	}
	now := tg.clk.Now()
	l, err := in.begin(now)
	if err != nil {
		in.fail(err)
		close(in.done)
		tg.deliver()
		return nil, fmt.Errorf("create: %w", err)
	}
	ti := &TestInstance{tg: tg, in: in, l: l, sl: tg.rt.sched.started(in, l, now)}
	tg.instances = append(tg.instances, ti)
	return ti, nil
}

// Instances are the instances started so far, ended ones included, in the
// order they started.
func (tg *TestGame) Instances() []*TestInstance { return tg.instances }

// Join connects a new player with params as its socket URL's query: placed
// by the runtime's rules (params["room"] is its ?room=). A player the
// runtime turns away (a full or locked room) is returned closed, its
// messages saying why; otherwise Join runs the tick that applies the join
// (the virtual clock moves on by one of its instance's ticks).
func (tg *TestGame) Join(params map[string]string) (*TestPlayer, error) {
	if params == nil {
		params = map[string]string{}
	}
	if room := params["room"]; !validRoom(room) {
		return nil, fmt.Errorf("room %q: a room code is letters and digits, up to 32", room)
	}
	p := &TestPlayer{tg: tg, c: tg.socket(), sees: map[string]bool{}}
	tg.players = append(tg.players, p)
	p.s = tg.rt.seatNew(tg.g, params["room"], params, p.c, nil)
	if p.s == nil {
		tg.deliver()
		return p, nil
	}
	ti, err := tg.track(p.s.in)
	if err != nil {
		return nil, err
	}
	if err := tg.Advance(ti.l.step); err != nil {
		return nil, err
	}
	return p, nil
}

// socket is a new player connection that writes nowhere: deliver takes
// its frames.
func (tg *TestGame) socket() *conn {
	return &conn{rt: tg.rt, wake: make(chan struct{}, 1), gone: make(chan struct{})}
}

// Advance moves the virtual clock on by d, running in time order every
// tick (with its send round, stats lines and snapshots) of every live
// instance and every runtime timer (resume graces, empty instances' ends)
// that falls due; a timer goes before a tick due at the same time, and
// instances due at the same time tick in the order they started. The
// ticks are the runtime's scheduler's, taken in turn on this goroutine
// instead of its workers'. An instance that fails or closes itself stops
// the clock at that tick with an error; one that ends because it stayed
// empty does not.
func (tg *TestGame) Advance(d time.Duration) error {
	if _, err := tg.first(); err != nil {
		return err
	}
	sched := tg.rt.sched
	end := tg.clk.Now().Add(d)
	for {
		sl, at := sched.next()
		if t, ok := tg.clk.next(); ok && !t.After(end) && (sl == nil || !t.After(at)) {
			tg.clk.set(t)
			tg.clk.fire()
			tg.deliver()
			continue
		}
		if sl == nil || at.After(end) {
			break
		}
		tg.clk.set(at)
		sched.take(sl)
		ok := sched.turn(sl, at)
		tg.deliver()
		if !ok {
			return fmt.Errorf("%s ended: %s", tg.of(sl).name(), tg.logs.last())
		}
	}
	tg.clk.set(end)
	return nil
}

// of is the TestInstance of a slot.
func (tg *TestGame) of(sl *slot) *TestInstance {
	for _, ti := range tg.instances {
		if ti.sl == sl {
			return ti
		}
	}
	return nil
}

// deliver takes what the instances wrote to each player's socket, as a
// socket's writer would.
func (tg *TestGame) deliver() {
	for _, p := range tg.players {
		c := p.c
		c.mu.Lock()
		queue := c.queue
		c.queue, c.queued, c.updates = nil, 0, 0
		c.mu.Unlock()
		for _, f := range queue {
			if f.op != opClose {
				p.receive(f.data)
				continue
			}
			code, reason := 1005, ""
			if len(f.data) >= 2 {
				code, reason = int(f.data[0])<<8|int(f.data[1]), string(f.data[2:])
			}
			b, _ := json.Marshal(map[string]any{"t": "close", "code": code, "reason": reason})
			p.messages = append(p.messages, b)
		}
	}
}

// receive keeps a frame and follows the player's view: what appeared and
// is not gone since.
func (p *TestPlayer) receive(m []byte) {
	p.messages = append(p.messages, json.RawMessage(m))
	var u struct {
		T      string `json:"t"`
		Appear []struct {
			ID string `json:"id"`
		} `json:"appear"`
		Gone []string `json:"gone"`
	}
	if json.Unmarshal(m, &u) != nil || u.T != "update" {
		return
	}
	for _, a := range u.Appear {
		p.sees[a.ID] = true
	}
	for _, id := range u.Gone {
		delete(p.sees, id)
	}
}

// State is the first instance's instance.state, as JSON.
func (tg *TestGame) State() (json.RawMessage, error) { return tg.read((*TestInstance).State) }

// Players is the first instance's instance.players, as JSON.
func (tg *TestGame) Players() (json.RawMessage, error) { return tg.read((*TestInstance).Players) }

// Entities is the first instance's instance.entities, as JSON.
func (tg *TestGame) Entities() (json.RawMessage, error) { return tg.read((*TestInstance).Entities) }

func (tg *TestGame) read(f func(*TestInstance) (json.RawMessage, error)) (json.RawMessage, error) {
	ti, err := tg.first()
	if err != nil {
		return nil, err
	}
	return f(ti)
}

// Logs are the lines the instances logged: instance.log and hook errors.
func (tg *TestGame) Logs() []string { return tg.logs.all() }

// Close ends the instances and the runtime.
func (tg *TestGame) Close() {
	for _, ti := range tg.instances {
		ti.in.stop(1001, "the test ended")
		close(ti.in.done)
	}
	tg.rt.Shutdown(context.Background())
}

// ID is the instance's id.
func (ti *TestInstance) ID() string { return ti.in.id }

// Room is the room code the instance holds, "" for a public instance.
func (ti *TestInstance) Room() string { return ti.in.room }

// Locked reports whether the game locked the instance (instance.lock()).
func (ti *TestInstance) Locked() bool {
	ti.in.mu.Lock()
	defer ti.in.mu.Unlock()
	return ti.in.locked
}

// Ended reports whether the instance has ended; its data stays readable.
func (ti *TestInstance) Ended() bool { return ti.in.ended() }

// State is instance.state, as JSON.
func (ti *TestInstance) State() (json.RawMessage, error) {
	return ti.eval(`__js.stringify(__inst.state === undefined ? null : __inst.state)`)
}

// Players is instance.players, as JSON.
func (ti *TestInstance) Players() (json.RawMessage, error) {
	return ti.eval(`__js.stringify(__inst.players)`)
}

// Entities is instance.entities, as JSON.
func (ti *TestInstance) Entities() (json.RawMessage, error) {
	return ti.eval(`__js.stringify(__inst.entities)`)
}

// eval runs a small script in the instance's JavaScript.
func (ti *TestInstance) eval(script string) (json.RawMessage, error) {
	v := ti.l.v
	return guarded(v.rt, v.budget, v.stuck, "reading the instance", func() (json.RawMessage, error) {
		x, err := v.rt.RunString(script)
		if err != nil {
			return nil, err
		}
		return asJSON(x)
	})
}

// name says which instance it is, in errors.
func (ti *TestInstance) name() string {
	if ti.in.room != "" {
		return "the instance of room " + ti.in.room
	}
	if ti == ti.tg.instances[0] {
		return "the instance"
	}
	return "instance " + ti.in.id
}

// ID is the player's id, "" when its join was refused.
func (p *TestPlayer) ID() string {
	if p.s == nil {
		return ""
	}
	return p.s.player
}

// Instance is the player's instance, nil when its join was refused.
func (p *TestPlayer) Instance() *TestInstance {
	if p.s == nil {
		return nil
	}
	for _, ti := range p.tg.instances {
		if ti.in == p.s.in {
			return ti
		}
	}
	return nil
}

// Send handles a command frame as the socket's reader does: validated at
// once (a bad one is answered with an error frame), applied at the next
// tick.
func (p *TestPlayer) Send(command string, args json.RawMessage) error {
	if err := p.open(); err != nil {
		return err
	}
	frame, err := json.Marshal(map[string]any{"c": command, "a": args})
	if err != nil {
		return err
	}
	p.c.handle(frame)
	p.tg.deliver()
	return nil
}

// open says why the player's socket takes no frame, if it does not.
func (p *TestPlayer) open() error {
	p.c.mu.Lock()
	closed := p.c.closed
	p.c.mu.Unlock()
	switch {
	case p.dropped:
		return errors.New("its connection was dropped: resume it first")
	case closed || p.s == nil:
		return errors.New("its socket is closed")
	}
	return nil
}

// Messages are the frames the player received, and a {"t": "close"} when
// its socket was closed.
func (p *TestPlayer) Messages() []json.RawMessage { return p.messages }

// Sees reports whether id is in the player's view.
func (p *TestPlayer) Sees(id string) bool { return p.sees[id] }

// Leave closes the player's socket cleanly: a leave, applied at the next
// tick.
func (p *TestPlayer) Leave() error {
	if err := p.open(); err != nil {
		return err
	}
	p.c.closeWith(1000, "")
	p.tg.rt.disconnected(p.c, true)
	p.tg.deliver()
	return nil
}

// Drop loses the player's connection without a close, as a dropped network
// does: the runtime holds its seat for the game's resumeGrace (disconnect
// runs at the next tick) and then, unless it resumes, it leaves.
func (p *TestPlayer) Drop() error {
	if err := p.open(); err != nil {
		return err
	}
	// The socket is gone: nothing more reaches the player on it.
	p.c.mu.Lock()
	p.c.closed, p.c.ended = true, true
	p.c.queue, p.c.queued = nil, 0
	p.c.mu.Unlock()
	p.dropped = true
	p.tg.rt.disconnected(p.c, false)
	return nil
}

// Resume connects a dropped player again with its resume token, as the
// browser library does, and runs the tick that applies it (reconnect runs;
// a welcome and a full view follow). It fails when the seat is gone: the
// grace ran out, or the player was kicked.
func (p *TestPlayer) Resume() error {
	if !p.dropped {
		return errors.New("the player is connected: drop it first")
	}
	c := p.tg.socket()
	s := p.tg.rt.resume(p.s.token, p.tg.g, c)
	if s == nil {
		return errors.New("its seat is gone: resumeGrace ran out, or it was kicked or its instance ended")
	}
	c.seat, p.c, p.dropped = s, c, false
	p.sees = map[string]bool{} // the new connection's view starts empty
	ti := p.Instance()
	return p.tg.Advance(ti.l.step)
}

// lines is an slog handler keeping the instance's log lines as text.
type lines struct {
	mu  sync.Mutex
	buf []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *lines) WithGroup(string) slog.Handler            { return l }

func (l *lines) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	var line string
	switch r.Message {
	case "game log":
		line = attrs["msg"]
	case "hook error":
		line = fmt.Sprintf("error in %s: %s", attrs["hook"], attrs["err"])
		if attrs["at"] != "" {
			line += " (at " + attrs["at"] + ")"
		}
	default:
		if r.Level < slog.LevelWarn {
			return nil
		}
		line = r.Message
		if e := attrs["err"]; e != "" {
			line += ": " + e
		} else if e := attrs["reason"]; e != "" {
			line += ": " + e
		}
	}
	l.mu.Lock()
	l.buf = append(l.buf, line)
	l.mu.Unlock()
	return nil
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.buf...)
}

func (l *lines) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return "no reason logged"
	}
	return l.buf[len(l.buf)-1]
}
