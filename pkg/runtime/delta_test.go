package runtime

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/hoster-dev/hoster/pkg/compact"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// deltaGame is a game whose every tick spawns, moves and removes things at
// random (a seeded generator inside the game), so deltas carry appears,
// changes and gones in every mix.
var deltaGame = map[string]string{
	"hoster-game.json":                `{"tickRate": 20, "sendRate": 10, "capacity": 50, "origins": ["*"]}`,
	"hoster-player/fields.json":       `{"x": "number", "hp": "number", "name": "string"}`,
	"hoster-player/join.js":           `export default function (i, p, a) { p.x = 0; p.hp = 3; p.name = a.name || "anon"; }`,
	"hoster-entities/mob/fields.json": `{"x": "number", "y": "number"}`,
	"hoster-entities/gem/fields.json": `{"v": "number"}`,
	"hoster-instance/create.js":       `export default function (i) { i.state.seed = 7; for (let k = 0; k < 10; k++) i.spawn("mob", {x: k, y: 0}); }`,
	"hoster-instance/tick.js": `export default function (i, dt) {
  const rnd = () => { i.state.seed = (i.state.seed * 1103515245 + 12345) % 2147483648; return i.state.seed / 2147483648; };
  for (const id in i.entities) {
    const e = i.entities[id], r = rnd();
    if (r < 0.05) i.remove(id);
    else if (e.type === "mob" && r < 0.4) e.x = Math.floor(rnd() * 10);
    else if (e.type === "mob" && r < 0.5) { e.y = rnd() < 0.5 ? undefined : 1; }
    else if (e.type === "gem" && r < 0.3) e.v++;
  }
  if (rnd() < 0.3) i.spawn(rnd() < 0.5 ? "mob" : "gem", {x: 1, y: 1, v: 0});
  for (const id in i.players) if (rnd() < 0.3) i.players[id].x = Math.floor(rnd() * 10);
}`,
}

// truthJS is what viewer pid should know now, computed from the live state
// independently of the runtime's delta code.
const truthJS = `function __truth(pid) {
  var out = {}, me = __inst.players[pid], vis = __R.player.visible;
  function add(id, type, o, fields) {
    if (vis && !vis(__inst, me, o)) return;
    var f = {};
    fields.forEach(function (k) { var x = o[k]; f[k] = x === undefined || (typeof x === "number" && !isFinite(x)) ? null : x; });
    out[id] = { type: type, f: f };
  }
  for (var id in __inst.players) add(id, "player", __inst.players[id], __pf);
  for (var id in __inst.entities) { var e = __inst.entities[id]; add(id, e.type, e, __ef[e.type] || []); }
  return JSON.stringify(out);
}`

type known struct {
	Type string         `json:"type"`
	F    map[string]any `json:"f"`
}

// TestDeltasConverge plays hundreds of send rounds in which every viewer is
// ready only at random, players join, leave and resume, and things appear,
// change and go. After every round, each viewer that was ready must know
// exactly what it sees, built only from the updates it received, with seq
// going up by one per update; with and without a visibility hook. Every
// other viewer takes the compact encoding, read back by pkg/compact's
// decoder.
func TestDeltasConverge(t *testing.T) {
	const hook = `export default function (i, me, thing) { return thing.id === me.id || (thing.x % 3) !== (me.x % 3); }`
	for _, tc := range []struct {
		name          string
		before, after string // the visibility hook before and after a hot reload half-way
	}{
		{"shared", "", ""},
		{"visible", hook, hook},
		{"reload adds visible", "", hook},
		{"reload drops visible", hook, ""},
		{"reload adds a field", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v *vm
			load := func(visible string) (*vm, goja.Callable) {
				files := map[string]string{}
				for k, v := range deltaGame {
					files[k] = v
				}
				if visible != "" {
					files["hoster-player/visible.js"] = visible
				}
				if tc.name == "reload adds a field" && v != nil { // the new code: mobs have a z
					files["hoster-entities/mob/fields.json"] = `{"x": "number", "y": "number", "z": "number"}`
					files["hoster-entities/mob/tick.js"] = `export default function (i, e) { e.z = e.x + 0.5; }`
				}
				var nv *vm
				if v == nil {
					nv = deltaVM(t, files)
				} else {
					nv = reloadVM(t, v, files)
				}
				v := nv
				if _, err := v.rt.RunString(fieldsJS(v) + truthJS); err != nil {
					t.Fatal(err)
				}
				truth, _ := goja.AssertFunction(v.rt.Get("__truth"))
				return v, truth
			}
			v, truth := load(tc.before)
			decoders := map[string]*compact.Decoder{} // the viewers on the compact encoding
			last := map[string]int64{}                // the time of each one's previous update
			tables := func(v *vm) string { return string(v.eng.tables()) }

			rng := rand.New(rand.NewPCG(1, 2))
			models := map[string]map[string]known{}
			seqs := map[string]float64{}
			inStep := map[string]bool{} // ready last round too: its changes must all be real changes
			next := 0
			var sent, compactSent int
			for round := 0; round < 400; round++ {
				if round == 200 {
					v, truth = load(tc.after)
					for _, d := range decoders {
						if err := d.Text([]byte(`{"t":"types","types":` + tables(v) + `}`)); err != nil {
							t.Fatal(err)
						}
					}
					inStep = map[string]bool{} // a reload may resend what did not change
				}
				events := []any{}
				if len(models) < 8 && rng.Float64() < 0.3 {
					next++
					id := fmt.Sprintf("p%d", next)
					events = append(events, []any{"join", id, map[string]string{"name": "n" + id}})
					models[id] = map[string]known{}
					if next%2 == 1 {
						decoders[id] = &compact.Decoder{}
					}
				}
				for id := range models {
					switch r := rng.Float64(); {
					case r < 0.01:
						events = append(events, []any{"leave", id})
						delete(models, id)
						delete(decoders, id)
					case r < 0.02:
						events = append(events, []any{"resume", id})
						models[id] = map[string]known{} // the client starts over on a welcome
						delete(inStep, id)
					}
				}
				ev, _ := json.Marshal(events)
				if _, err := v.tickAt(0.05, int64(round), jsonEvents(t, string(ev))); err != nil {
					t.Fatal(err)
				}
				for _, e := range events { // welcomed: a compact viewer's decoder starts over
					e := e.([]any)
					if d := decoders[e[1].(string)]; d != nil && (e[0] == "join" || e[0] == "resume") {
						if err := d.Text([]byte(`{"t":"welcome","player":"` + e[1].(string) + `","types":` + tables(v) + `}`)); err != nil {
							t.Fatal(err)
						}
						last[e[1].(string)] = 0
					}
				}
				var ready, compacts []any
				for id := range models {
					if rng.Float64() < 0.6 {
						ready = append(ready, id)
						compacts = append(compacts, decoders[id] != nil)
					}
				}
				for _, u := range sendVM(t, v, ready, compacts) {
					id, msg := u.viewer, string(u.msg)
					if u.compact {
						frame := frameCompact(u.seq, u.msg, int64(round), last[id])
						last[id] = int64(round)
						u, err := decoders[id].Update(frame)
						if err != nil {
							t.Fatalf("round %d: %s could not decode its update: %v", round, id, err)
						}
						if u.Time != int64(round) {
							t.Fatalf("round %d: %s decoded time %d", round, id, u.Time)
						}
						b, _ := json.Marshal(u)
						msg = string(b)
						compactSent++
					}
					var m struct {
						T      string  `json:"t"`
						Seq    float64 `json:"seq"`
						Appear []struct {
							ID   string         `json:"id"`
							Type string         `json:"type"`
							F    map[string]any `json:"f"`
						} `json:"appear"`
						Change []struct {
							ID string         `json:"id"`
							F  map[string]any `json:"f"`
						} `json:"change"`
						Gone []string `json:"gone"`
					}
					if err := json.Unmarshal([]byte(msg), &m); err != nil || m.T != "update" {
						t.Fatalf("round %d: bad update %q: %v", round, msg, err)
					}
					if m.Seq != seqs[id]+1 {
						t.Fatalf("round %d: %s got seq %v after %v", round, id, m.Seq, seqs[id])
					}
					seqs[id] = m.Seq
					model := models[id]
					for _, a := range m.Appear {
						model[a.ID] = known{Type: a.Type, F: a.F}
					}
					for _, c := range m.Change {
						k, ok := model[c.ID]
						if !ok {
							t.Fatalf("round %d: %s got a change of %s, which it does not know", round, id, c.ID)
						}
						if len(c.F) == 0 {
							t.Fatalf("round %d: empty change %s", round, msg)
						}
						for f, x := range c.F {
							if inStep[id] && reflect.DeepEqual(k.F[f], x) {
								t.Fatalf("round %d: %s, in step, was sent unchanged field %s of %s: %s", round, id, f, c.ID, msg)
							}
							k.F[f] = x
						}
					}
					for _, g := range m.Gone {
						if _, ok := model[g]; !ok {
							t.Fatalf("round %d: %s told %s is gone, which it does not know", round, id, g)
						}
						delete(model, g)
					}
					sent++
				}
				inStep = map[string]bool{}
				for _, r := range ready {
					id := r.(string)
					inStep[id] = true
					want := map[string]known{}
					s, err := truth(goja.Undefined(), v.rt.ToValue(id))
					if err != nil {
						t.Fatal(err)
					}
					json.Unmarshal([]byte(s.String()), &want)
					if !reflect.DeepEqual(models[id], want) {
						t.Fatalf("round %d: viewer %s knows\n%v\nbut sees\n%v", round, id, models[id], want)
					}
				}
			}
			if sent < 500 {
				t.Fatalf("only %d updates in 400 rounds: the game is not exercising deltas", sent)
			}
			if compactSent < 200 || sent-compactSent < 200 {
				t.Fatalf("%d updates of %d compact: both encodings must be exercised", compactSent, sent)
			}
			t.Logf("%d updates checked, %d of them compact", sent, compactSent)
		})
	}
}

// jsonEvents is the JSON list s of events as a tick takes them: ["join",
// id, params], ["leave", id], ["drop", id], ["resume", id] or ["cmd", id,
// name, args].
func jsonEvents(t testing.TB, s string) []event {
	t.Helper()
	var list [][]any
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		t.Fatal(err)
	}
	out := make([]event, 0, len(list))
	for _, e := range list {
		ev := event{kind: e[0].(string), player: e[1].(string)}
		switch ev.kind {
		case "join":
			ev.params = map[string]string{}
			for k, x := range e[2].(map[string]any) {
				ev.params[k] = x.(string)
			}
		case "cmd":
			ev.name, ev.args = e[2].(string), e[3].(map[string]any)
		}
		out = append(out, ev)
	}
	return out
}

// deltaVersion loads the game in files.
func deltaVersion(t testing.TB, files map[string]string) *version {
	t.Helper()
	root := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(root, "d.example", "g", rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatal(err, res.Problems())
	}
	src, err := readSource(filepath.Join(root, "d.example", "g"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := loadVersion(src, 2*1e9, stuckWatch{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// deltaInstance is an instance of g outside any socket.
func deltaInstance(g *version) *Instance {
	return &Instance{id: "0a0b0c0d0e0f", rt: &Runtime{o: Options{HookBudget: 10e9}, now: time.Now}, g: &Game{Domain: "d.example", Name: "g"}, ver: g, log: slog.New(slog.DiscardHandler)}
}

// deltaVM starts an instance of the game in files, outside any socket.
func deltaVM(t testing.TB, files map[string]string) *vm {
	t.Helper()
	v, err := deltaInstance(deltaVersion(t, files)).start(testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// reloadVM moves old's instance to the game in files, as a hot reload does.
func reloadVM(t testing.TB, old *vm, files map[string]string) *vm {
	t.Helper()
	return reloadTo(t, old, deltaVersion(t, files))
}

// reloadTo moves old's instance to g, as a hot reload does.
func reloadTo(t testing.TB, old *vm, g *version) *vm {
	t.Helper()
	v, err := deltaInstance(g).handOver(old, g, testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sendVM runs a send round for the viewers in ready, compacts[i] true for
// those on the compact encoding (nil: none).
func sendVM(t testing.TB, v *vm, ready []any, compacts []any) []update {
	t.Helper()
	rv := make([]readyViewer, len(ready))
	for i, id := range ready {
		rv[i] = readyViewer{id: id.(string), compact: compacts != nil && compacts[i].(bool)}
	}
	out, err := guarded(v.rt, v.budget, v.stuck, "sending", func() ([]update, error) { return v.send(rv) })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fieldsJS declares, for truthJS, the fields of the code v runs: __pf the
// player's that every viewer sees, __ef[type] each entity type's.
func fieldsJS(v *vm) string {
	names := func(fs []fieldSpec) []string {
		out := []string{}
		for _, f := range fs {
			out = append(out, f.name)
		}
		return out
	}
	ef := map[string][]string{}
	for t, ts := range v.eng.sch.entities {
		ef[t] = names(ts.fields)
	}
	pf, _ := json.Marshal(names(v.eng.sch.player.fields))
	efs, _ := json.Marshal(ef)
	return "var __pf = " + string(pf) + ", __ef = " + string(efs) + ";\n"
}

// TestResumeAfterDroppingTheVisibilityHook: a reload that drops the
// visibility hook remembers what each viewer knew, to tell it at its next
// update what no longer exists; a viewer that resumes before that update
// starts over and must not be told of things gone that it never heard of.
// (TestDeltasConverge found this about one run in ten.)
func TestResumeAfterDroppingTheVisibilityHook(t *testing.T) {
	withHook := map[string]string{}
	for k, v := range deltaGame {
		withHook[k] = v
	}
	withHook["hoster-instance/tick.js"] = `export default function (i) {}`
	withHook["hoster-instance/create.js"] = `export default function (i) { i.spawn("gem", {v: 1}); }`
	withHook["hoster-commands/drop/run.js"] = `export default function (i) { for (const id in i.entities) i.remove(id); }`
	withHook["hoster-player/visible.js"] = `export default function () { return true; }`
	noHook := map[string]string{}
	for k, v := range withHook {
		if k != "hoster-player/visible.js" {
			noHook[k] = v
		}
	}
	tick := func(v *vm, round int, events string) {
		if _, err := v.tickAt(0.05, int64(round), jsonEvents(t, events)); err != nil {
			t.Fatal(err)
		}
	}
	send := func(v *vm) []update {
		return sendVM(t, v, []any{"p1"}, nil)
	}

	v := deltaVM(t, withHook)
	tick(v, 1, `[["join", "p1", {}]]`)
	send(v) // p1 knows itself and the gem
	v = reloadVM(t, v, noHook)
	tick(v, 2, `[["cmd", "p1", "drop", {}], ["resume", "p1"]]`) // the gem goes; p1 starts over
	out := send(v)
	if len(out) != 1 || strings.Contains(string(out[0].msg), `"gone"`) {
		t.Fatalf("after its resume p1 got %v: told of things gone it does not know", out)
	}
}
