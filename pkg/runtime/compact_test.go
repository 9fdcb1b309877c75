package runtime

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/socktest"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// The socket tests again, every client on the compact protocol (its frames
// read back as the JSON protocol's by pkg/compact's decoder).
func TestCompactProtocol(t *testing.T) {
	for name, test := range map[string]func(*testing.T){
		"JoinAppearChangeGone": TestJoinAppearChangeGone,
		"Resume":               TestResume,
		"PrecisionOnTheWire":   TestPrecisionOnTheWire,
	} {
		t.Run(name, func(t *testing.T) {
			dialCompact = true
			defer func() { dialCompact = false }()
			test(t)
		})
	}
}

// compactGame has a field of every kind: a number with a precision, an
// integer, a string, a boolean, a number that goes null (NaN), a private
// number; and gems whose value is a float32, then a float64, and that a
// visibility hook may hide.
var compactGame = map[string]string{
	"hoster-game.json": `{"tickRate": 20, "sendRate": 10, "capacity": 4, "origins": ["*"]}`,
	"hoster-player/fields.json": `{"x": {"type": "number", "precision": 0.01}, "hp": "integer", "name": "string", "alive": "boolean",
  "note": "number", "secret": {"type": "number", "private": true}, "z1": "number", "z2": "integer", "z3": "boolean"}`,
	"hoster-player/join.js":           `export default function (i, p, a) { p.x = 1 / 3; p.hp = 3; p.name = a.name; p.alive = true; p.secret = p.id.length; p.z1 = 0.25; p.z2 = -7; p.z3 = false; }`,
	"hoster-entities/gem/fields.json": `{"v": "number", "tag": "string"}`,
	"hoster-commands/set/args.json":   `{"x": "number", "hp": "integer", "v": "number"}`,
	"hoster-commands/set/run.js": `export default function (i, p, a) {
  p.x = a.x; p.hp = a.hp; p.alive = !p.alive; p.note = p.alive ? a.x * 1e6 : NaN; p.secret += 1;
  p.z1 = p.alive ? a.v : undefined; p.z2 = a.hp * 3; p.z3 = !p.z3; // past the first byte of a field mask
  if (a.v < 0) { for (const id in i.entities) i.remove(id); return; }
  for (const id in i.entities) { i.entities[id].v = a.v; return; }
  i.spawn("gem", {v: a.v, tag: "é😀\u0000" + p.name});
}`,
}

// TestCompactAndJSONViewersAgree puts a JSON viewer and a compact viewer
// in one instance and plays every kind of change through it (appear,
// change, gone, nulls, private fields, precision, floats and big numbers,
// strings beyond ASCII, a hot reload that adds a field, a resume): after
// every update both had at the same time they knew the same, frame for
// frame, and each knows its own private field and not the other's; with
// and without a visibility hook.
func TestCompactAndJSONViewersAgree(t *testing.T) {
	for _, visible := range []string{"", `export default function (i, me, thing) { return thing.type !== "gem" || thing.v < 100; }`} {
		name := "shared"
		files := maps.Clone(compactGame)
		if visible != "" {
			name = "visible"
			files["hoster-player/visible.js"] = visible
		}
		t.Run(name, func(t *testing.T) {
			e := start(t, map[string]map[string]string{"a.example/g": files})
			js := e.join(t, "a.example", "g", "json")
			dialCompact = true
			cp := e.join(t, "a.example", "g", "compact")
			dialCompact = false
			if js.inst != cp.inst {
				t.Fatal("the two viewers are in different instances")
			}
			both := func(what string, ok func(map[string]map[string]any) bool) {
				t.Helper()
				js.until(what, ok)
				cp.until(what, ok)
			}
			both("both players, x at its precision", func(m map[string]map[string]any) bool {
				return len(m) == 2 && m[js.me]["x"] == 0.33 && m[cp.me]["x"] == 0.33
			})
			steps := []map[string]any{
				{"x": 1.005, "hp": 4, "v": 0.5},       // a gem appears; note null
				{"x": -2.5, "hp": -1 << 40, "v": 0.1}, // a float64, a big integer; note a number
				{"x": 12345.678, "hp": 0, "v": 1000},  // hidden by the hook, if any
				{"x": 0.0, "hp": 1, "v": 2},           // back in view
				{"x": 7.0, "hp": 2, "v": -1},          // the gem goes
				{"x": 1e-9, "hp": 3, "v": 1.0 / 3},    // x rounds to 0; a gem again
			}
			for i, a := range steps {
				who := js
				if i%2 == 1 {
					who = cp
				}
				who.send("set", a)
				x := math.Round(a["x"].(float64)*100) / 100
				both(fmt.Sprintf("step %d", i), func(m map[string]map[string]any) bool { return m[who.me] != nil && m[who.me]["x"] == x })
			}
			// A hot reload adds a field.
			dir := filepath.Join(e.root, "a.example", "g")
			os.WriteFile(filepath.Join(dir, "hoster-player/fields.json"), []byte(`{"x": {"type": "number", "precision": 0.01}, "hp": "integer", "name": "string", "alive": "boolean",
  "note": "number", "secret": {"type": "number", "private": true}, "z1": "number", "z2": "integer", "z3": "boolean", "lvl": "integer"}`), 0o644)
			os.MkdirAll(filepath.Join(dir, "hoster-instance"), 0o755)
			os.WriteFile(filepath.Join(dir, "hoster-instance/tick.js"), []byte(`export default function (i) { for (const id in i.players) i.players[id].lvl = 7; }`), 0o644)
			if res, err := gen.Generate(e.root); err != nil || res.Failed() {
				t.Fatal(err, res.Problems())
			}
			e.rt.Reload("a.example", "g")
			both("the new field", func(m map[string]map[string]any) bool { return m[js.me]["lvl"] == 7.0 && m[cp.me]["lvl"] == 7.0 })
			js.send("set", map[string]any{"x": 3, "hp": 5, "v": 5})
			both("a change after the reload", func(m map[string]map[string]any) bool { return m[js.me]["x"] == 3.0 })

			// The compact viewer resumes: it starts over on its new socket.
			cp.ws.Close()
			dialCompact = true
			r, _, err := e.dial(t, "a.example", "/g?resume="+cp.resume, nil)
			dialCompact = false
			if err != nil {
				t.Fatal(err)
			}
			if w := r.next("welcome"); w["player"] != cp.me {
				t.Fatalf("resumed as %v", w["player"])
			}
			r.me = cp.me
			js.send("set", map[string]any{"x": 4, "hp": 6, "v": 6})
			r.until("all of it again, and the last change", func(m map[string]map[string]any) bool {
				return len(m) >= 2 && m[js.me]["x"] == 4.0 && m[cp.me]["lvl"] == 7.0
			})
			js.until("the last change", func(m map[string]map[string]any) bool { return m[js.me]["x"] == 4.0 })

			// Frame for frame: at every time both had an update, the same
			// things, but for each one's own private field.
			public := func(m map[string]map[string]any, me string) map[string]map[string]any {
				out := map[string]map[string]any{}
				for id, f := range m {
					f = maps.Clone(f)
					if id != me && f["secret"] != nil {
						t.Fatalf("%s knows the private field of %s: %v", me, id, f)
					}
					delete(f, "secret")
					out[id] = f
				}
				return out
			}
			compared := 0
			for _, pair := range [][2]*client{{js, cp}, {js, r}} {
				a, b := pair[0], pair[1]
				a.mu.Lock()
				b.mu.Lock()
				at := map[float64]map[string]map[string]any{}
				for _, s := range a.history {
					at[s.time] = public(s.things, a.me)
				}
				for _, s := range b.history {
					if want, ok := at[s.time]; ok {
						compared++
						if got := public(s.things, cp.me); !reflect.DeepEqual(got, want) {
							t.Errorf("at %v the compact viewer knew\n%v\nthe JSON viewer\n%v", s.time, got, want)
						}
					}
					if mine := s.things[cp.me]; mine != nil && mine["secret"] == nil {
						t.Errorf("the compact viewer lacks its private field at %v: %v", s.time, mine)
					}
				}
				b.mu.Unlock()
				a.mu.Unlock()
			}
			if compared < 6 {
				t.Fatalf("only %d updates at the same time to compare", compared)
			}
			t.Logf("%d updates compared", compared)
		})
	}
}

// twoViewers is the game of pkg/compact/testdata/twoviewers and its
// script, which connects a compact and a JSON viewer with the browser
// library and compares what they know after every update.
func twoViewers(t *testing.T) (files map[string]string, script string) {
	dir := "../../pkg/compact/testdata/twoviewers"
	files = map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, "game"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(filepath.Join(dir, "game"), p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, filepath.Join(dir, "twoviewers.js")
}

// The browser library in Node: a viewer on the compact protocol and one on
// JSON know the same after every update at the same time, through a hot
// reload that gives mobs a new field.
func TestCompactLibraryInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the browser library is not exercised here")
	}
	files, script := twoViewers(t)
	e := start(t, map[string]map[string]string{"a.example/g": files})
	// Node's WebSocket cannot set Host: a proxy stands where Caddy would.
	target, _ := url.Parse(e.url)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = "a.example"
	}})
	defer proxy.Close()
	lib := filepath.Join(e.root, "a.example", "g", gen.ClientFile)
	abs, _ := filepath.Abs(script)
	cmd := exec.Command(node, "--experimental-websocket", "--no-warnings", "-e", `
const lib = require(process.argv[1]), twoViewers = require(process.argv[2]);
setTimeout(() => { console.log("timeout"); process.exit(2); }, 30000).unref();
twoViewers(lib, process.argv[3], globalThis.WebSocket, 4, (r) => { console.log(JSON.stringify(r)); process.exit(0); });
`, lib, abs, "ws"+strings.TrimPrefix(proxy.URL, "http")+"/g")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once both are in, new code gives mobs a field.
	g := e.rt.lookup("a.example", "g")
	viewers := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		n := 0
		for _, in := range g.instances {
			in.mu.Lock()
			n += len(in.conns)
			in.mu.Unlock()
		}
		return n
	}
	tick := time.NewTicker(10 * time.Millisecond)
	for deadline := time.Now().Add(20 * time.Second); viewers() < 2; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("the two viewers never joined")
		}
	}
	tick.Stop()
	dir := filepath.Join(e.root, "a.example", "g", "hoster-entities", "mob")
	os.WriteFile(filepath.Join(dir, "fields.json"), []byte(`{"x": {"type": "number", "precision": 0.0001}, "y": {"type": "number", "precision": 0.0001}, "lvl": "integer"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tick.js"), []byte(`export default function (i, e) { e.lvl = 7; }`), 0o644)
	if res, err := gen.Generate(e.root); err != nil || res.Failed() {
		t.Fatal(err, res.Problems())
	}
	e.rt.Reload("a.example", "g")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	last := socktest.TwoViewers(t, stdout.Bytes(), "Node")
	for _, s := range last {
		if !strings.Contains(s, `"lvl":7`) {
			t.Fatalf("a viewer never saw the field the reload added: %s", s)
		}
	}
}
