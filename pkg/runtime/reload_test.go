package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/gen"
)

func TestHotReload(t *testing.T) {
	files := lab(4)
	files["hoster-instance/serialise.js"] = `export default function (i) { return { moves: i.state.moves || 0 }; }`
	files["hoster-instance/restore.js"] = `export default function (i, s) { i.state = { moves: s.moves, restored: true }; }`
	files["hoster-commands/move/run.js"] = `export default function (i, p, a) { p.x += a.dx; i.state.moves = (i.state.moves || 0) + 1; }`
	e := start(t, map[string]map[string]string{"a.example/lab": files})
	c := e.join(t, "a.example", "lab", "ada")
	c.send("move", map[string]any{"dx": 1})
	c.until("moved once", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 1.0 })

	// Push new code: a move now counts ten times, and the state says how it got here.
	dir := filepath.Join(e.root, "a.example", "lab")
	os.WriteFile(filepath.Join(dir, "hoster-commands/move/run.js"),
		[]byte(`export default function (i, p, a) { p.x += 10 * a.dx; i.state.moves++; p.name = i.state.restored ? "restored" : "lost"; }`), 0o644)
	if res, err := gen.Generate(e.root); err != nil || res.Failed() {
		t.Fatal(err, res.Problems())
	}
	c.drain()
	e.rt.Reload("a.example", "lab")
	c.send("move", map[string]any{"dx": 1})
	c.until("the new behaviour on the same socket, state restored", func(m map[string]map[string]any) bool {
		return m[c.me]["x"] == 11.0 && m[c.me]["name"] == "restored"
	})
	for {
		select {
		case m := <-c.msgs:
			if m["t"] == "welcome" || m["appear"] != nil {
				t.Fatalf("the reload re-greeted the player: %v", m)
			}
			continue
		default:
		}
		break
	}

	// A broken push: the old (new) code keeps serving.
	os.WriteFile(filepath.Join(dir, "hoster.server.js"), []byte("this is not javascript {"), 0o644)
	e.rt.Reload("a.example", "lab")
	c.send("move", map[string]any{"dx": 1})
	c.until("still serving after a broken push", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 21.0 })
	if len(e.rt.Games()) != 1 {
		t.Fatal("a broken push unloaded the game")
	}

	// The game's folder deleted: its players are told and closed.
	os.RemoveAll(dir)
	e.rt.Reload("a.example", "lab")
	if code := c.closed(t); code != 1001 {
		t.Fatalf("deleted game closed with %d, want 1001", code)
	}
	if len(e.rt.Games()) != 0 {
		t.Fatal("a deleted game is still listed")
	}
}

// Without serialise and restore, the state object is carried over as it is.
func TestHotReloadKeepsStateWithoutHooks(t *testing.T) {
	files := lab(4)
	files["hoster-commands/move/run.js"] = `export default function (i, p, a) { i.state.n = (i.state.n || 0) + 1; p.x = i.state.n; }`
	e := start(t, map[string]map[string]string{"a.example/lab": files})
	c := e.join(t, "a.example", "lab", "ada")
	c.send("move", map[string]any{"dx": 1})
	c.send("move", map[string]any{"dx": 1})
	c.until("two moves", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 2.0 })
	dir := filepath.Join(e.root, "a.example", "lab")
	os.WriteFile(filepath.Join(dir, "hoster-commands/move/run.js"),
		[]byte(`export default function (i, p, a) { i.state.n += 100; p.x = i.state.n; }`), 0o644)
	if res, err := gen.Generate(e.root); err != nil || res.Failed() {
		t.Fatal(err, res.Problems())
	}
	e.rt.Reload("a.example", "lab")
	c.send("move", map[string]any{"dx": 1})
	c.until("state carried over", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 102.0 })
}

// A changed hoster-game.json applies to running instances too: here a full
// instance (capacity 1) takes a second player once the capacity is raised.
func TestReloadAppliesNewConfigToRunningInstances(t *testing.T) {
	moved := make(chan struct{})
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(1)}, func(o *Options) {
		o.Logger = slog.New(logWatch{Handler: testLogger(t).Handler(), msg: "moved to the new code", seen: moved, once: &sync.Once{}})
	})
	first := e.join(t, "a.example", "lab", "one")
	dir := filepath.Join(e.root, "a.example", "lab")
	os.WriteFile(filepath.Join(dir, "hoster-game.json"), []byte(cfg(2)), 0o644)
	e.rt.Reload("a.example", "lab")
	// The upgrade happens at the instance's next tick.
	select {
	case <-moved:
	case <-time.After(10 * time.Second):
		t.Fatal("the running instance never moved to the new code")
	}
	if second := e.join(t, "a.example", "lab", "two"); second.inst != first.inst {
		t.Fatal("the raised capacity did not apply to the running instance")
	}
}

// logWatch is a slog handler that signals when a message is logged.
type logWatch struct {
	slog.Handler
	msg  string
	seen chan struct{}
	once *sync.Once
}

func (w logWatch) WithAttrs(a []slog.Attr) slog.Handler {
	w.Handler = w.Handler.WithAttrs(a)
	return w
}

func (w logWatch) WithGroup(name string) slog.Handler {
	w.Handler = w.Handler.WithGroup(name)
	return w
}

func (w logWatch) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == w.msg {
		w.once.Do(func() { close(w.seen) })
	}
	return w.Handler.Handle(ctx, r)
}

// A reload stuck in one game (its restore spins until the hook budget stops
// it) never pauses another: game b keeps applying moves and sending updates
// the whole time.
func TestReloadNeverPausesOtherGames(t *testing.T) {
	failed := make(chan struct{})
	aFiles := lab(4)
	aFiles["hoster-instance/serialise.js"] = `export default function (i) { return {}; }`
	aFiles["hoster-instance/restore.js"] = `export default function (i, s) {}`
	e := startWith(t, map[string]map[string]string{"a.example/lab": aFiles, "b.example/lab": lab(4)}, func(o *Options) {
		o.HookBudget = 1500 * time.Millisecond
		o.Logger = slog.New(logWatch{Handler: testLogger(t).Handler(), msg: "hot reload failed; the old code keeps running", seen: failed, once: &sync.Once{}})
	})
	e.join(t, "a.example", "lab", "a") // a live instance of a, to be upgraded
	b := e.join(t, "b.example", "lab", "b")

	dir := filepath.Join(e.root, "a.example", "lab")
	os.WriteFile(filepath.Join(dir, "hoster-instance/restore.js"), []byte(`export default function (i, s) { for (;;) {} }`), 0o644)
	if res, err := gen.Generate(e.root); err != nil || res.Failed() {
		t.Fatal(err, res.Problems())
	}
	b.drain()
	e.rt.Reload("a.example", "lab")
	updates := 0
	deadline := time.After(20 * time.Second)
	for done := false; !done; {
		b.send("move", map[string]any{"dx": 0.01})
		select {
		case m := <-b.msgs:
			if m["t"] == "update" {
				updates++
			}
		case <-failed:
			done = true
		case <-deadline:
			t.Fatal("a's stuck reload never ended")
		}
	}
	// About 37 rounds fit in the budget; a paused b would have none.
	if updates < 5 {
		t.Fatalf("b sent only %d updates while a's reload was stuck", updates)
	}
}

// Reloads while sockets are being placed: a socket that looked its game up
// before a reload is placed through the same game, on the current code, and
// every instance ends on the last version pushed. Run under -race: the
// instance map was once shared by two games behind two mutexes.
func TestReloadWhileASocketIsBeingPlaced(t *testing.T) {
	files := lab(2)
	files["hoster-commands/move/run.js"] = `export default function (i, p, a) { p.x = 0; }`
	e := start(t, map[string]map[string]string{"a.example/lab": files})
	dir := filepath.Join(e.root, "a.example", "lab")
	push := func(n int) {
		os.WriteFile(filepath.Join(dir, "hoster-commands/move/run.js"),
			[]byte(fmt.Sprintf(`export default function (i, p, a) { p.x = %d; }`, n)), 0o644)
		if res, err := gen.Generate(e.root); err != nil || res.Failed() {
			t.Fatal(err, res.Problems())
		}
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		clients []*client
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 6; k++ {
				c := e.join(t, "a.example", "lab", "p")
				mu.Lock()
				clients = append(clients, c)
				mu.Unlock()
			}
		}()
	}
	for n := 1; n <= 8; n++ {
		push(n)
		e.rt.Reload("a.example", "lab")
	}
	wg.Wait()
	for _, c := range clients {
		c.send("move", map[string]any{"dx": 1})
		c.until("its move run by the last version", func(m map[string]map[string]any) bool { return m[c.me] != nil && m[c.me]["x"] == 8.0 })
	}
}

// A game keeps its identity across reloads: what a socket looked up before
// one is the game after it, and starts instances on the current code.
func TestReloadKeepsTheGameIdentity(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
	g := e.rt.lookup("a.example", "lab")
	first := g.current()
	e.rt.Reload("a.example", "lab")
	if e.rt.lookup("a.example", "lab") != g {
		t.Fatal("a reload replaced the game's identity")
	}
	in, err := e.rt.place(g, "", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.version() != g.current() || in.version() == first {
		t.Fatal("an instance placed through a game held across a reload runs old code")
	}
	in.release()
}
