package runtime

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/compact"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// Values from JavaScript are data, not trust: a game's code that replaces
// what the runtime relies on, or forges what Go reads back, ends its own
// instance at worst (1011, logged with where), never the process, and the
// other games' players keep getting their updates.

// hostileEnv runs the hostile game a.example/bad beside the plain
// b.example/lab, with the log kept for the test.
func hostileEnv(t *testing.T, bad map[string]string) (*env, *waitbuf.Buffer) {
	t.Helper()
	logs := waitbuf.New()
	e := startWith(t, map[string]map[string]string{"a.example/bad": bad, "b.example/lab": lab(4)}, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	return e, logs
}

// joinAs joins like env.join, on the compact protocol when compact is set.
func (e *env) joinAs(t *testing.T, host, game, name string, compactProto bool) *client {
	t.Helper()
	h := http.Header{}
	if compactProto {
		h.Set("Sec-WebSocket-Protocol", compact.Protocol)
	}
	c, _, err := e.dial(t, host, "/"+game+"?name="+name, h)
	if err != nil {
		t.Fatal(err)
	}
	w := c.next("welcome")
	c.me, c.inst = w["player"].(string), w["instance"].(string)
	return c
}

// stillServes checks that the plain game's player gets its updates.
func stillServes(t *testing.T, other *client, x float64) {
	t.Helper()
	other.send("move", map[string]any{"dx": 1})
	other.until("the other game still sends its updates", func(m map[string]map[string]any) bool { return m[other.me]["x"] == x })
}

// closedWith1011 checks that c's instance ended with 1011 and that the log
// says so, naming where: want matches the line's at.
func closedWith1011(t *testing.T, c *client, logs *waitbuf.Buffer, want string) {
	t.Helper()
	if code := c.closed(t); code != 1011 {
		t.Fatalf("the hostile instance closed with %d, want 1011", code)
	}
	if !logs.WaitFor(`msg="instance closed: a hook failed"`, 1, 10*time.Second) { // a hang guard
		t.Fatalf("the closing is not logged:\n%s", logs.String())
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="instance closed: a hook failed"`) {
			line = l
		}
	}
	if !regexp.MustCompile(`game=a\.example/bad .*at=\S*` + want).MatchString(line) {
		t.Fatalf("the log line does not name the game and %s:\n%s", want, line)
	}
}

// TestReplacedBuiltinsAffectOnlyTheGame: a game that replaces
// JSON.stringify (with one whose result throws in toString) or
// Array.prototype.push (with one that empties what it pushes) changes them
// for its own code only: the runtime took its own before the game's code
// ran, so the game goes on and its players keep getting updates. (Before,
// the first killed the process in step, the second in sendRound.)
func TestReplacedBuiltinsAffectOnlyTheGame(t *testing.T) {
	for name, tick := range map[string]string{
		"JSON.stringify":       `JSON.stringify = function () { return { toString: function () { throw new Error("no text"); } }; };`,
		"Array.prototype.push": `Array.prototype.push = function () { for (var i = 0; i < arguments.length; i++) this[this.length] = typeof arguments[i] === "string" ? arguments[i] : []; return this.length; };`,
	} {
		t.Run(name, func(t *testing.T) {
			bad := lab(4)
			// The game's messages go through the runtime's JSON too.
			bad["hoster-instance/tick.js"] = `export default function (i) { ` + tick + ` for (const id in i.players) i.send(id, "hi", 1); }`
			e, _ := hostileEnv(t, bad)
			other := e.join(t, "b.example", "lab", "o")
			victim := e.joinAs(t, "a.example", "bad", "v", true)
			plain := e.joinAs(t, "a.example", "bad", "w", false)
			for _, c := range []*client{victim, plain} {
				c.send("move", map[string]any{"dx": 1})
				c.until("the hostile game's own player still gets updates", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 1.0 })
			}
			stillServes(t, other, 1)
		})
	}
}

// TestForgedResultsEndOnlyTheirInstance: a game that reaches past the
// builtins into the runtime's own globals, so that what Go reads back is
// not what it must be (the tick's requests an object whose toJSON throws),
// or that gives the send round a thing Go
// cannot read (a field whose getter throws, or never returns), ends its
// own instance with 1011, logged. Before, the first killed the process.
// (The send round's result and the time of the updates, which a game could
// once forge too, are Go's own since the send round moved to Go, and the
// prelude's functions Go calls are found once, before any hook runs.)
func TestForgedResultsEndOnlyTheirInstance(t *testing.T) {
	for _, tc := range []struct{ name, tick, at string }{
		{"tick result", `globalThis.__out = { length: 1, toJSON: function () { throw new Error("no text"); } };`, `tick\.js:1`},
		{"a field that throws", `i.entities.trap = { type: "box", get n() { throw new Error("no field"); } };`, `tick\.js:1`},
		{"a field that never returns", `i.entities.trap = { type: "box", get n() { for (;;) {} } };`, `tick\.js:1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := lab(4)
			bad["hoster-instance/tick.js"] = `export default function (i) { if (i.state.armed) { ` + tc.tick + ` } }`
			bad["hoster-commands/arm/args.json"] = `{}`
			bad["hoster-commands/arm/run.js"] = `export default function (i) { i.state.armed = true; }`
			bad["hoster-instance/create.js"] = `export default function (i) { i.spawn("box", {n: 1}); return {}; }`
			e, logs := hostileEnv(t, bad)
			other := e.join(t, "b.example", "lab", "o")
			victim := e.joinAs(t, "a.example", "bad", "v", true) // the compact protocol: Go reads __now
			stillServes(t, other, 1)
			victim.send("arm", nil)
			closedWith1011(t, victim, logs, tc.at)
			stillServes(t, other, 2)
		})
	}
}

// TestValueOfLoopInAnUpdateIsStopped: an entity whose field is a getter
// that never returns, read by the send round for a JSON-protocol update,
// is cut off by the hook budget and logged with the game's own file:line.
func TestValueOfLoopInAnUpdateIsStopped(t *testing.T) {
	bad := lab(4)
	bad["hoster-instance/tick.js"] = "export default function (i) {\n  if (!i.state.armed) return;\n  i.entities.trap = { type: \"box\", get n() { for (;;) {} } };\n  for (const id in i.entities) i.entities[id].n++; // an update to send\n}"
	bad["hoster-commands/arm/args.json"] = `{}`
	bad["hoster-commands/arm/run.js"] = `export default function (i) { i.state.armed = true; }`
	bad["hoster-instance/create.js"] = `export default function (i) { i.spawn("box", {n: 1}); return {}; }`
	e, logs := hostileEnv(t, bad)
	other := e.join(t, "b.example", "lab", "o")
	victim := e.joinAs(t, "a.example", "bad", "v", false)
	victim.send("arm", nil)
	closedWith1011(t, victim, logs, `tick\.js:3`)
	stillServes(t, other, 1)
}

// TestSpinningLoadIsCutOff: a game whose top-level code makes loading spin
// (an Object.prototype.toJSON that never returns, called when its registry
// is read) is cut off by the hook budget, logged as not loaded, naming its
// file, and skipped: the other games load, and Shutdown returns. One that
// replaces Object.keys with an endless loop loads and plays: the runtime
// took its own Object.keys first. (Before, either load spun forever, and New
// never returned.)
func TestSpinningLoadIsCutOff(t *testing.T) {
	root := t.TempDir()
	spins := lab(4)
	spins["hoster-instance/create.js"] = "Object.prototype.toJSON = function () { for (;;) {} };\nexport default function (i) { return {}; }"
	keys := lab(4)
	keys["hoster-instance/create.js"] = "Object.keys = function () { for (;;) {} };\nexport default function (i) { i.spawn(\"box\", {n: 1}); return {}; }"
	for key, files := range map[string]map[string]string{"a.example/spins": spins, "a.example/keys": keys, "b.example/lab": lab(4)} {
		domain, name, _ := strings.Cut(key, "/")
		writeGame(t, root, domain, name, files)
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating the test games: %v %v", err, res.Problems())
	}
	logs := waitbuf.New()
	made := make(chan *Runtime, 1)
	go func() {
		rt, err := New(Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), GamesRoot: root})
		if err != nil {
			t.Error(err)
		}
		made <- rt
	}()
	var rt *Runtime
	select {
	case rt = <-made:
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatalf("New never returned:\n%s", logs.String())
	}
	ts := httptest.NewServer(rt)
	defer ts.Close()
	if got := rt.Games(); !slices.Equal(got, []string{"a.example/keys", "b.example/lab"}) {
		t.Fatalf("games served: %v", got)
	}
	if !regexp.MustCompile(`msg="game not loaded.*game=a\.example/spins .*create\.js:1`).MatchString(logs.String()) {
		t.Fatalf("the spinning load is not logged with its file:\n%s", logs.String())
	}
	e := &env{rt: rt, url: ts.URL, root: root}
	stillServes(t, e.join(t, "b.example", "lab", "o"), 1)
	k := e.join(t, "a.example", "keys", "k")
	k.until("the game that replaced Object.keys plays", func(m map[string]map[string]any) bool { return len(m) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard
	defer cancel()
	if err := rt.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
