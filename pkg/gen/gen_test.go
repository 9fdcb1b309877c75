package gen

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/hoster-dev/hoster/pkg/module"
)

var update = flag.Bool("update", false, "rewrite the .golden files")

// copyTree copies src into a fresh temporary directory and returns it, so
// generation never writes into testdata or the repository.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "sites")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// render describes a generation: the problems, then every generated file.
func render(t *testing.T, root string, res Result) string {
	var b strings.Builder
	for _, g := range res.Games {
		fmt.Fprintf(&b, "game %s\n", g.Dir)
		for _, p := range g.Problems {
			fmt.Fprintf(&b, "  problem %s\n", p)
		}
	}
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (d.Name() == ServerFile || d.Name() == ClientFile || d.Name() == TypesFile || d.Name() == EnvFile) {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	for _, f := range files {
		data, _ := os.ReadFile(filepath.Join(root, f))
		if filepath.Base(f) == ClientFile {
			// The library's body is a fixed template; its schema line is what varies.
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, "var SCHEMA") {
					data = []byte(line + "\n")
				}
			}
		}
		fmt.Fprintf(&b, "==> %s <==\n%s", f, data)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	cases, _ := filepath.Glob("testdata/*")
	for _, dir := range cases {
		if st, _ := os.Stat(dir); !st.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			root := copyTree(t, dir)
			res, err := Generate(root)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, root, res)
			golden := dir + ".golden"
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("generation differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
			if strings.HasPrefix(filepath.Base(dir), "err-") != res.Failed() {
				t.Errorf("Failed() = %v", res.Failed())
			}
			// Determinism: a second run writes nothing and changes no byte.
			res2, _ := Generate(root)
			for _, g := range res2.Games {
				if len(g.Written) > 0 {
					t.Errorf("second run rewrote %v", g.Written)
				}
			}
			if again := render(t, root, res2); again != got {
				t.Error("second run differs")
			}
		})
	}
}

func TestNoBuildMachinePathsInOutput(t *testing.T) {
	a, b := copyTree(t, "../../examples/sites"), copyTree(t, "../../examples/sites")
	for _, root := range []string{a, b} {
		if res, err := Generate(root); err != nil || res.Failed() {
			t.Fatalf("%v %v", err, res.Problems())
		}
	}
	for _, f := range []string{ServerFile, ClientFile, TypesFile} {
		x, _ := os.ReadFile(filepath.Join(a, "example.com/arena", f))
		y, _ := os.ReadFile(filepath.Join(b, "example.com/arena", f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two checkouts", f)
		}
		if bytes.Contains(x, []byte(a)) || bytes.Contains(x, []byte(os.TempDir())) {
			t.Errorf("%s holds a path of the build machine", f)
		}
	}
}

// The committed example must be what gen makes of it today.
func TestExampleIsFresh(t *testing.T) {
	root := copyTree(t, "../../examples/sites")
	res, err := Generate(root)
	if err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	for _, g := range res.Games {
		if len(g.Written) > 0 {
			t.Errorf("examples/sites is stale: regenerating changed %v (run: go run ./cmd/hoster gen examples/sites)", g.Written)
		}
	}
}

// fakeInstance is a minimal instance object in JS, as the runtime provides.
const fakeInstance = `
var logs = [], sent = [], timers = [];
function makeInstance() {
  var n = 0;
  var inst = {
    id: "0a0b0c0d0e0f", state: {}, players: {}, entities: {},
    spawn: function (type, fields) { var e = Object.assign({ id: "e" + (++n), type: type }, fields || {}); inst.entities[e.id] = e; return e; },
    remove: function (id) { delete inst.players[id]; delete inst.entities[id]; },
    now: function () { return 1000; },
    log: function () { logs.push(Array.prototype.join.call(arguments, " ")); },
    send: function (p, type, data) { sent.push([p.id, type, data]); },
    broadcast: function (type, data) { sent.push(["*", type, data]); },
    after: function (s, fn) { timers.push(fn); return { cancel: function () {} }; },
    every: function (s, fn) { timers.push(fn); return { cancel: function () {} }; },
    refuse: function (reason) { throw { refused: String(reason) }; }
  };
  return inst;
}`

// loadServerFile compiles a generated hoster.server.js and loads it as the
// runtime does.
func loadServerFile(t *testing.T, path string) *goja.Runtime {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	program, err := goja.Compile(ServerFile, string(src), false)
	if err != nil {
		t.Fatal(err)
	}
	vm, _, err := module.Load(program)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

func TestExampleHooksRunInGoja(t *testing.T) {
	vm := loadServerFile(t, "../../examples/sites/example.com/arena/"+ServerFile)
	if _, err := vm.RunString(fakeInstance); err != nil {
		t.Fatal(err)
	}
	script := `
var R = __hoster, I = makeInstance();
R.instance.create(I);
var coins = Object.keys(I.entities).length;
var p = { id: "p1", type: "player" }; I.players.p1 = p;
R.player.join(I, p, { name: "ada" });
var x0 = p.x;
R.commands.move.run(I, p, { dx: 1, dy: 0 });
R.instance.tick(I, 0.05);
var coin = I.entities[Object.keys(I.entities)[0]];
R.entities.coin.tick(I, coin, 0.05);
var saved = R.instance.serialise(I);
var I2 = makeInstance(); I2.players.p1 = { id: "p1", type: "player" };
R.instance.restore(I2, saved);
R.commands.say.run(I, p, { text: "hi" });
var refused = null;
try { R.commands.say.run(I, p, { text: "again" }); } catch (e) { refused = e.refused; }
timers[0]();
R.player.leave(I, p);
JSON.stringify({
  coins: coins, name: p.name, moved: p.x > x0 || x0 === 100, visibleSelf: R.player.visible(I, p, p),
  restored: I2.players.p1.name, round: I2.state.round, logs: logs.length, sent: sent, refused: refused, timers: timers.length,
  fields: R.player.fields, args: R.commands.move.args
});`
	v, err := vm.RunString(script)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"coins":12,"name":"ada","moved":true,"visibleSelf":true,"restored":"ada","round":1,"logs":3,` +
		`"sent":[["p1","hello",{"text":"Welcome, ada! Collect the coins."}],["*","chat",{"from":"ada","text":"hi"}],["*","round",{"round":1,"leader":"ada"}]],` +
		`"refused":"wait a second between messages","timers":2,` +
		`"fields":{"name":"string","score":"integer","x":{"type":"number","interpolate":true},"y":{"type":"number","interpolate":true}},` +
		`"args":{"dx":{"type":"number","min":-1,"max":1},"dy":{"type":"number","min":-1,"max":1}}}`
	if v.String() != want {
		t.Fatalf("hooks gave\n%s\nwant\n%s", v, want)
	}
}

// Syntax newer than goja understands is lowered by esbuild: the modern test
// game's join hook uses class fields, optional chaining, ??, **, object rest
// and spread, generators and async functions.
func TestModernSyntaxRunsOnGoja(t *testing.T) {
	root := copyTree(t, "testdata/ok-modern")
	if res, err := Generate(root); err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	vm := loadServerFile(t, filepath.Join(root, "b.com/modern", ServerFile))
	v, err := vm.RunString(`var p = {id: "p"}; __hoster.player.join({}, p, {tag: "red", a: "1"}); JSON.stringify(p)`)
	if err != nil {
		t.Fatal(err)
	}
	if v.String() != `{"id":"p","hp":9,"tag":"red"}` {
		t.Fatalf("join gave %s", v)
	}
}

func BenchmarkGenerate50Games(b *testing.B) {
	root := filepath.Join(b.TempDir(), "sites")
	for i := 0; i < 50; i++ {
		dst := filepath.Join(root, fmt.Sprintf("d%d.com", i%5), fmt.Sprintf("game%d", i))
		if err := os.CopyFS(dst, os.DirFS("../../examples/sites/example.com/arena")); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Touch nothing, but remove outputs so every run generates in full.
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && (d.Name() == ServerFile || d.Name() == ClientFile || d.Name() == TypesFile || d.Name() == EnvFile) {
				os.Remove(p)
			}
			return nil
		})
		b.StartTimer()
		res, err := Generate(root)
		if err != nil || res.Failed() || len(res.Games) != 50 {
			b.Fatalf("%v %v", err, res.Problems())
		}
	}
}

// The summary names the game's own files that went into the server module:
// kept private, or served as well when hoster-game.json says so.
func TestSummaryNamesWhatIsKeptPrivate(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a.com", "tag")
	for name, body := range map[string]string{
		"hoster-game.json":          `{"tickRate": 10, "sendRate": 5, "capacity": 2, "origins": ["*"], "public": ["lib/shared.js"]}`,
		"hoster-instance/create.ts": "import { rounds } from \"../lib/rounds\";\nimport { SIZE } from \"../lib/shared.js\";\nimport data from \"../lib/data.json\";\nexport default function (i: any) { i.state.n = rounds() + SIZE + data.n; }\n",
		"lib/rounds.ts":             "export function rounds(): number { return 3; }\n",
		"lib/shared.js":             "export const SIZE = 100;\n",
		"lib/data.json":             `{"n": 1}`,
		"lib/page.js":               "console.log('the page alone');\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	res, err := Generate(root)
	if err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	g := res.Games[0]
	if strings.Join(g.Private, " ") != "lib/data.json lib/rounds.ts" || strings.Join(g.Public, " ") != "lib/shared.js" {
		t.Errorf("private %q, public %q", g.Private, g.Public)
	}
	if got, want := g.Summary(), "a.com/tag: 1 hook, 0 commands, 0 entity types; private: lib/data.json, lib/rounds.ts; public: lib/shared.js"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	g.Private = []string{"a", "b", "c", "d", "e", "f"}
	g.Public = nil
	if got, want := g.Summary(), "a.com/tag: 1 hook, 0 commands, 0 entity types; private: a, b, c, d and 2 more"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// TestReleaseStamp: each generated file's header records the release the
// caller passes (the program's own, which gen does not look up), and "dev"
// when it passes none.
func TestReleaseStamp(t *testing.T) {
	for release, want := range map[string]string{"v1.2.3": "(hoster v1.2.3)", "": "(hoster dev)"} {
		root := copyTree(t, "../../examples/sites")
		if res, err := GenerateWith(root, Options{Release: release}); err != nil || res.Failed() {
			t.Fatalf("%v %v", err, res.Problems())
		}
		for _, f := range []string{ServerFile, ClientFile, TypesFile, EnvFile} {
			b, err := os.ReadFile(filepath.Join(root, "example.com/arena", f))
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(b), "\n")
			if !strings.HasPrefix(first, "// Code generated by hoster gen "+want) {
				t.Errorf("Release %q: %s begins %q, want the stamp %s", release, f, first, want)
			}
		}
	}
}
