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

// TestGame is one instance of a game for `hoster test`: the game's real
// module in the real runtime (goja, the tick, commands validated against
// args.json, per-viewer deltas, hook errors contained) on a virtual clock
// that only Advance moves. Players are sockets without a network: what the
// server would write to them is kept, frame by frame.
//
// A TestGame is driven by one goroutine, the test's.
type TestGame struct {
	rt      *Runtime
	g       *Game
	in      *Instance
	l       *loop
	now     time.Time
	players []*TestPlayer
	logs    *lines
}

// TestPlayer is a player of a TestGame.
type TestPlayer struct {
	tg       *TestGame
	c        *conn
	id       string
	messages []json.RawMessage
	sees     map[string]bool
}

// testEpoch is where a TestGame's virtual clock starts.
var testEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// NewTestGame loads the generated game in dir (<root>/<domain>/<game>) and
// starts one instance of it; create runs at the first Advance or Join.
func NewTestGame(dir string) (*TestGame, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	tg := &TestGame{now: testEpoch, logs: &lines{}}
	rt, err := New(Options{
		GamesRoot: filepath.Join(dir, "hoster-test-no-root"),
		Logger:    slog.New(tg.logs),
		Now:       func() time.Time { return tg.now },
		// A test's own clock never runs out; the budget still stops an
		// endless loop in the game's code.
		HookBudget: 5 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	rt.manual = true
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

// started makes sure the instance exists and create has run.
func (tg *TestGame) started(params map[string]string) error {
	if tg.in != nil {
		if tg.in.ended() {
			return errors.New("the instance has ended: " + tg.logs.last())
		}
		return nil
	}
	in, err := tg.rt.place(tg.g, "", params)
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.seats-- // place reserved a seat; Join takes its own
	in.mu.Unlock()
	tg.in = in
	tg.l, err = in.begin(tg.now)
	if err != nil {
		in.fail(err)
		return fmt.Errorf("create: %w", err)
	}
	return nil
}

// Join seats a new player with params and runs the tick that applies the
// join (the virtual clock moves on by one tick).
func (tg *TestGame) Join(params map[string]string) (*TestPlayer, error) {
	if params == nil {
		params = map[string]string{}
	}
	if err := tg.started(params); err != nil {
		return nil, err
	}
	in := tg.in
	c := &conn{rt: tg.rt, wake: make(chan struct{}, 1), gone: make(chan struct{})}
	in.mu.Lock()
	in.seats++
	in.nextID++
	player := fmt.Sprintf("p%d", in.nextID)
	in.mu.Unlock()
	s := &seat{token: newID() + newID(), in: in, player: player, conn: c, joined: tg.now}
	tg.rt.mu.Lock()
	tg.rt.seats[s.token] = s
	in.mu.Lock()
	in.byPlayer[player] = s
	in.mu.Unlock()
	tg.rt.mu.Unlock()
	c.seat = s
	if !in.enqueue(event{kind: "join", player: player, params: params, conn: c, seat: s}) {
		return nil, errors.New("the instance is closing")
	}
	p := &TestPlayer{tg: tg, c: c, id: player, sees: map[string]bool{}}
	tg.players = append(tg.players, p)
	if err := tg.Advance(tg.l.step); err != nil {
		return nil, err
	}
	return p, nil
}

// Advance moves the virtual clock on by d, running every tick (and the send
// rounds, stats lines and snapshots) that falls due.
func (tg *TestGame) Advance(d time.Duration) error {
	if err := tg.started(nil); err != nil {
		return err
	}
	end := tg.now.Add(d)
	for {
		next := tg.l.last.Add(tg.l.step)
		if next.After(end) {
			break
		}
		tg.now = next
		ok := tg.in.step(tg.l, next)
		tg.deliver()
		if !ok {
			return errors.New("the instance ended: " + tg.logs.last())
		}
	}
	tg.now = end
	return nil
}

// deliver takes what the instance wrote to each player's socket, as a
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

// State is instance.state, as JSON.
func (tg *TestGame) State() (json.RawMessage, error) {
	return tg.eval(`JSON.stringify(__inst.state === undefined ? null : __inst.state)`)
}

// Players is instance.players, as JSON.
func (tg *TestGame) Players() (json.RawMessage, error) {
	return tg.eval(`JSON.stringify(__inst.players)`)
}

// Entities is instance.entities, as JSON.
func (tg *TestGame) Entities() (json.RawMessage, error) {
	return tg.eval(`JSON.stringify(__inst.entities)`)
}

// eval runs a small script in the instance's JavaScript, under the budget.
func (tg *TestGame) eval(script string) (json.RawMessage, error) {
	if err := tg.started(nil); err != nil {
		return nil, err
	}
	v, err := tg.l.v.rt.RunString(script)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(v.String()), nil
}

// Logs are the lines the instance logged: instance.log and hook errors.
func (tg *TestGame) Logs() []string { return tg.logs.all() }

// Close ends the instance and the runtime.
func (tg *TestGame) Close() {
	if tg.in != nil {
		tg.in.stop(1001, "the test ended")
		close(tg.in.done)
	}
	tg.rt.Shutdown(context.Background())
}

// ID is the player's id.
func (p *TestPlayer) ID() string { return p.id }

// Send handles a command frame as the socket's reader does: validated at
// once (a bad one is answered with an error frame), applied at the next
// tick.
func (p *TestPlayer) Send(command string, args json.RawMessage) error {
	frame, err := json.Marshal(map[string]any{"c": command, "a": args})
	if err != nil {
		return err
	}
	p.c.handle(frame)
	p.tg.deliver()
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
	p.c.closeWith(1000, "")
	p.tg.rt.disconnected(p.c, true)
	return nil
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
