package runtime

import (
	"encoding/json"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/hoster-dev/hoster/pkg/compact"
)

// recordGame has a player with a private field and an interpolated one,
// and entities of two types; commands write fields as tests ask.
var recordGame = map[string]string{
	"hoster-game.json":                `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
	"hoster-player/fields.json":       `{"x": {"type": "number", "interpolate": true}, "name": "string", "secret": {"type": "integer", "private": true}}`,
	"hoster-player/join.js":           `export default function (i, p, a) { p.x = 0; p.name = "n" + p.id; p.secret = p.id.length * 1000 + Number(p.id.slice(1)); }`,
	"hoster-entities/mob/fields.json": `{"x": "number", "y": "number", "label": "string"}`,
	"hoster-entities/gem/fields.json": `{"v": "integer"}`,
	"hoster-instance/create.js":       `export default function (i) { i.spawn("mob", {x: 1, y: 2, label: "m", speed: 3}); i.spawn("gem", {v: 1}); }`,
	"hoster-commands/set/args.json":   `{"id": "string", "field": "string", "json": "string"}`,
	"hoster-commands/set/run.js": `export default function (i, p, a) {
  const o = a.id === "" ? p : (i.players[a.id] || i.entities[a.id]);
  if (a.json === "undefined") delete o[a.field]; else o[a.field] = JSON.parse(a.json);
}`,
}

// recordViewers follows viewers' updates, each as a model of what it knows
// (id -> fields), decoding the compact ones with pkg/compact.
type recordViewers struct {
	t       testing.TB
	v       *vm
	models  map[string]map[string]known
	dec     map[string]*compact.Decoder
	round   int
	updates map[string][]string // each viewer's updates as JSON
}

func newRecordViewers(t testing.TB, v *vm) *recordViewers {
	return &recordViewers{t: t, v: v, models: map[string]map[string]known{}, dec: map[string]*compact.Decoder{}, updates: map[string][]string{}}
}

// tick runs a tick with events (as __tick takes them); a join or resume
// starts the viewer's model (and decoder) over.
func (rv *recordViewers) tick(events ...[]any) {
	rv.t.Helper()
	rv.round++
	ev, _ := json.Marshal(append([]any{}, anyList(events)...))
	if _, err := rv.v.tickAt(0.05, int64(rv.round), jsonEvents(rv.t, string(ev))); err != nil {
		rv.t.Fatal(err)
	}
	for _, e := range events {
		id, _ := e[1].(string)
		switch e[0] {
		case "join", "resume":
			rv.models[id] = map[string]known{}
			if d := rv.dec[id]; d != nil {
				rv.welcome(id)
			}
		case "leave":
			delete(rv.models, id)
		}
	}
}

func anyList(events [][]any) []any {
	out := make([]any, len(events))
	for i, e := range events {
		out[i] = e
	}
	return out
}

// welcome starts a compact viewer's decoder over, as a welcome does.
func (rv *recordViewers) welcome(id string) {
	if err := rv.dec[id].Text([]byte(`{"t":"welcome","player":"` + id + `","types":` + string(rv.v.eng.tables()) + `}`)); err != nil {
		rv.t.Fatal(err)
	}
}

// reload moves to new code, as a hot reload does: compact viewers get the
// new tables.
func (rv *recordViewers) reload(files map[string]string) {
	rv.t.Helper()
	rv.v = reloadVM(rv.t, rv.v, files)
	for _, d := range rv.dec {
		if err := d.Text([]byte(`{"t":"types","types":` + string(rv.v.eng.tables()) + `}`)); err != nil {
			rv.t.Fatal(err)
		}
	}
}

// send runs a send round for ready and applies each update to its model.
func (rv *recordViewers) send(ready ...string) {
	rv.t.Helper()
	var ids, compacts []any
	for _, id := range ready {
		ids = append(ids, id)
		compacts = append(compacts, rv.dec[id] != nil)
	}
	for _, u := range sendVM(rv.t, rv.v, ids, compacts) {
		msg := string(u.msg)
		if u.compact {
			m, err := rv.dec[u.viewer].Update(frameCompact(u.seq, u.msg, int64(rv.round), 0))
			if err != nil {
				rv.t.Fatalf("%s could not decode its update: %v", u.viewer, err)
			}
			b, _ := json.Marshal(m)
			msg = string(b)
		}
		rv.updates[u.viewer] = append(rv.updates[u.viewer], msg)
		var m compact.Message
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			rv.t.Fatalf("a bad update %s: %v", msg, err)
		}
		model := rv.models[u.viewer]
		for _, a := range m.Appear {
			model[a.ID] = known{Type: a.Type, F: a.F}
		}
		for _, c := range m.Change {
			k, ok := model[c.ID]
			if !ok {
				rv.t.Fatalf("%s got a change of %s, which it does not know: %s", u.viewer, c.ID, msg)
			}
			maps.Copy(k.F, c.F)
		}
		for _, g := range m.Gone {
			delete(model, g)
		}
	}
}

// want is what a viewer should know now, from the records: each thing it
// sees (by the visibility hook, called here again) with its declared
// fields as sent (those the thing holds a value of its type for), and the
// viewer's own private fields on its own player.
func (rv *recordViewers) want(id string) map[string]known {
	e := rv.v.eng
	out := map[string]known{}
	me := rv.v.rt.Get("__inst").(*goja.Object).Get("players").(*goja.Object).Get(id)
	for _, r := range e.list {
		if rv.v.visible != nil {
			sees, err := rv.v.visible(goja.Undefined(), rv.v.inst, me, r.obj)
			if err != nil {
				rv.t.Fatal(err)
			}
			if !sees.ToBoolean() {
				continue
			}
		}
		f := map[string]any{}
		for n, fs := range r.ts.fields {
			if x := r.v[n]; x.k != vUndef {
				f[fs.name] = jsonAny(x)
			}
		}
		out[r.id] = known{Type: r.typ, F: f}
	}
	if vw := e.viewers[id]; vw != nil && vw.pv != nil && out[id].F != nil {
		for n, fs := range e.sch.player.priv {
			out[id].F[fs.name] = jsonAny(vw.pv[n])
		}
	}
	return out
}

func jsonAny(x val) any {
	var v any
	json.Unmarshal(appendJSONVal(nil, x), &v)
	return v
}

// converged fails unless every viewer in ids knows what it should.
func (rv *recordViewers) converged(ids ...string) {
	rv.t.Helper()
	for _, id := range ids {
		if got, want := rv.models[id], rv.want(id); !reflect.DeepEqual(got, want) {
			rv.t.Fatalf("viewer %s knows\n%v\nbut the records hold\n%v", id, got, want)
		}
	}
}

// set writes field of thing id (of the acting player p when "") to the
// JSON value js ("undefined" deletes it), from the set command.
func set(p, id, field, js string) []any {
	return []any{"cmd", p, "set", map[string]any{"id": id, "field": field, "json": js}}
}

// A write marks its field at once; the send round reads only marked
// fields of a thing, and sends a field only when its value as sent
// changed.
func TestRecordWriteMarks(t *testing.T) {
	v := deltaVM(t, recordGame)
	rv := newRecordViewers(t, v)
	rv.tick([]any{"join", "p1", map[string]string{}})
	rv.send("p1")
	ents := v.rt.Get("__inst").(*goja.Object).Get("entities").(*goja.Object)
	mob := thingOf(ents.Get("e1").(*goja.Object))
	if mob == nil {
		t.Fatal("a spawned entity is not a thing")
	}
	if mob.dirt || mob.dirty[mob.ts.index["y"]] {
		t.Fatal("a thing is marked after the send round read it")
	}
	rv.tick(set("p1", "e1", "y", "5"))
	if !mob.dirt || !mob.dirty[mob.ts.index["y"]] || mob.dirty[mob.ts.index["x"]] {
		t.Fatalf("the write of y marked %v", mob.dirty)
	}
	rv.tick(set("p1", "e1", "speed", "9")) // undeclared: marks nothing
	if mob.dirty[mob.ts.index["x"]] || mob.dirty[mob.ts.index["label"]] {
		t.Fatalf("an undeclared property marked %v", mob.dirty)
	}
	rv.send("p1")
	if last := rv.updates["p1"][len(rv.updates["p1"])-1]; !strings.Contains(last, `"change":[{"id":"e1","f":{"y":5}}]`) {
		t.Fatalf("the update after writing y is %s", last)
	}
	if mob.dirt {
		t.Fatal("the send round left the marks")
	}
	rv.tick(set("p1", "e1", "y", "5")) // the same value: marked, not sent
	rv.send("p1")
	if n := len(rv.updates["p1"]); n != 2 {
		t.Fatalf("an unchanged value was sent: %v", rv.updates["p1"])
	}
	rv.tick(set("p1", "e1", "y", "undefined")) // deleted: null on the wire
	rv.send("p1")
	rv.converged("p1")
	if got := rv.models["p1"]["e1"].F["y"]; got != nil {
		t.Fatalf("a deleted field is %v, not null", got)
	}
	keys, _ := v.rt.RunString(`JSON.stringify(Object.keys(__inst.entities.e1)) + JSON.stringify(__inst.entities.e1)`)
	if keys.String() != `["x","label","speed","id","type"]{"x":1,"label":"m","speed":9,"id":"e1","type":"mob"}` {
		t.Fatalf("the thing's properties are %s", keys)
	}
}

// A value of the wrong type is refused at the write: reported once per
// field with the writer's file:line, never sent; the viewers keep the last
// value of the field's type.
func TestRecordTypeRefusedAtTheWrite(t *testing.T) {
	files := maps.Clone(recordGame)
	files["hoster-commands/bad/args.json"] = `{}`
	files["hoster-commands/bad/run.js"] = "export default function (i, p) {\n  p.name = 4;\n  p.x = 1;\n}"
	tg := testGame(t, files)
	p, err := tg.Join(nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.Send("bad", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := tg.Advance(200e6); err != nil {
			t.Fatal(err)
		}
	}
	want := "error in fields: field name of a player must be a string, not 4: the value is not sent (at hoster-commands/bad/run.js:2)"
	n := 0
	for _, l := range tg.Logs() {
		if l == want {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the wrong type was logged %d times, not once with its file:line:\n%s", n, strings.Join(tg.Logs(), "\n"))
	}
	all := ""
	for _, m := range p.Messages() {
		all += string(m)
	}
	if strings.Contains(all, `"name":4`) || !strings.Contains(all, `"name":"n`) || !strings.Contains(all, `"x":1`) {
		t.Fatalf("the player got:\n%s", all)
	}
}

// A private field reaches only its own player, in both encodings, with and
// without a visibility hook.
func TestRecordPrivateReachesOnlyItsPlayer(t *testing.T) {
	for _, visible := range []string{"", `export default function () { return true; }`} {
		files := maps.Clone(recordGame)
		if visible != "" {
			files["hoster-player/visible.js"] = visible
		}
		rv := newRecordViewers(t, deltaVM(t, files))
		rv.dec["p2"] = &compact.Decoder{}
		rv.tick([]any{"join", "p1", map[string]string{}}, []any{"join", "p2", map[string]string{}})
		rv.send("p1", "p2")
		rv.tick(set("p1", "", "secret", "11"), set("p2", "", "secret", "22"))
		rv.send("p1", "p2")
		rv.converged("p1", "p2")
		for id, own := range map[string]float64{"p1": 11, "p2": 22} {
			for other, k := range rv.models[id] {
				if _, has := k.F["secret"]; has != (other == id) {
					t.Fatalf("visible %v: viewer %s knows %s as %v", visible != "", id, other, k.F)
				}
			}
			if got := rv.models[id][id].F["secret"]; got != own {
				t.Fatalf("visible %v: viewer %s knows its secret as %v", visible != "", id, got)
			}
		}
	}
}

// interpolate is kept with the field and changes nothing on the wire.
func TestRecordInterpolateFlag(t *testing.T) {
	plain := maps.Clone(recordGame)
	plain["hoster-player/fields.json"] = `{"x": "number", "name": "string", "secret": {"type": "integer", "private": true}}`
	var got [2][]string
	for i, files := range []map[string]string{recordGame, plain} {
		v := deltaVM(t, files)
		if x := v.eng.sch.player.fields[v.eng.sch.player.index["x"]]; x.interp != (i == 0) {
			t.Fatalf("the interpolate flag of x is %v", x.interp)
		}
		rv := newRecordViewers(t, v)
		rv.dec["p2"] = &compact.Decoder{}
		rv.tick([]any{"join", "p1", map[string]string{}}, []any{"join", "p2", map[string]string{}})
		rv.send("p1", "p2")
		rv.tick(set("p1", "", "x", "2.5"))
		rv.send("p1", "p2")
		got[i] = append(rv.updates["p1"], rv.updates["p2"]...)
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Fatalf("interpolate changed the updates:\n%v\n%v", got[0], got[1])
	}
}

// A reload that changes fields.json refits the records: a field removed,
// added or retyped leaves no viewer (JSON or compact, in step or behind)
// holding a stale value.
func TestRecordReloadRefit(t *testing.T) {
	for _, tc := range []struct {
		name, fields string
		check        func(k known) bool
	}{
		{"removed", `{"x": "number", "y": "number"}`, func(k known) bool { _, has := k.F["label"]; return !has }},
		{"added", `{"x": "number", "y": "number", "label": "string", "speed": "number"}`, func(k known) bool { return k.F["speed"] == 3.0 }},
		{"retyped", `{"x": "number", "y": "number", "label": "number"}`, func(k known) bool { return k.F["label"] == nil }},
		{"retyped to the value's type", `{"x": "string", "y": "number", "label": "string"}`, func(k known) bool { return k.F["x"] == nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, visible := range []string{"", `export default function () { return true; }`} {
				files := maps.Clone(recordGame)
				if visible != "" {
					files["hoster-player/visible.js"] = visible
				}
				rv := newRecordViewers(t, deltaVM(t, files))
				rv.dec["p2"], rv.dec["p4"] = &compact.Decoder{}, &compact.Decoder{}
				var joins [][]any
				for _, id := range []string{"p1", "p2", "p3", "p4"} {
					joins = append(joins, []any{"join", id, map[string]string{}})
				}
				rv.tick(joins...)
				rv.send("p1", "p2", "p3", "p4")
				rv.tick(set("p1", "e1", "label", `"seen"`))
				rv.send("p1", "p2") // p3 and p4 are behind
				next := maps.Clone(files)
				next["hoster-entities/mob/fields.json"] = tc.fields
				rv.reload(next)
				rv.tick()
				rv.send("p1", "p2", "p3", "p4")
				rv.converged("p1", "p2", "p3", "p4")
				for _, id := range []string{"p1", "p2", "p3", "p4"} {
					if k := rv.models[id]["e1"]; !tc.check(k) {
						t.Fatalf("visible %v: after the reload viewer %s knows the mob as %v", visible != "", id, k.F)
					}
				}
			}
		})
	}
}

// fuzzVersions are the codes FuzzRecords moves between: recordGame, with
// and without a visibility hook, and with a mob's fields removed, added and
// retyped.
func fuzzVersions(t testing.TB) []*version {
	var out []*version
	for _, mob := range []string{
		`{"x": "number", "y": "number", "label": "string"}`,
		`{"x": "number", "label": "string"}`,
		`{"x": "number", "y": "number", "label": "number", "speed": "number"}`,
	} {
		for _, visible := range []string{"", `export default function (i, me, t) { return t.id === me.id || t.x % 2 === 0; }`} {
			files := maps.Clone(recordGame)
			files["hoster-entities/mob/fields.json"] = mob
			files["hoster-commands/spawn/args.json"] = `{"type": "string"}`
			files["hoster-commands/spawn/run.js"] = `export default function (i, p, a) { i.spawn(a.type, {x: 0}); }`
			files["hoster-commands/remove/args.json"] = `{"id": "string"}`
			files["hoster-commands/remove/run.js"] = `export default function (i, p, a) { i.remove(a.id); }`
			if visible != "" {
				files["hoster-player/visible.js"] = visible
			}
			out = append(out, deltaVersion(t, files))
		}
	}
	return out
}

// FuzzRecords drives random writes (of every type, wrong ones included),
// spawns, removals, joins, leaves, resumes and reloads, with random viewers
// ready each round, and checks after every send round that each ready
// viewer, on the JSON protocol (p1, p3) or the compact one (p2, p4), knows
// exactly what the records hold.
func FuzzRecords(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 40, 41, 42, 200, 17, 33, 250, 9, 0, 77, 5})
	f.Add([]byte{0, 1, 64, 65, 66, 128, 129, 130, 230, 231, 232, 233, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 1, 192, 3, 224, 2, 192, 3, 224, 4, 192, 3}) // p1 and p2 see a mob lose y, then label retyped
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox"))
	versions := fuzzVersions(f)
	values := []string{"1", "2.5", "-0", "1e-7", "null", "undefined", `"s"`, `"\u00e9\n"`, "true", "false", "{}", "3", "1e300"}
	fields := []string{"x", "y", "label", "speed", "v", "name", "secret"}
	ids := []string{"p1", "p2", "p3", "p4"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		v, err := deltaInstance(versions[0]).start(testEpoch)
		if err != nil {
			t.Fatal(err)
		}
		rv := newRecordViewers(t, v)
		joined := map[string]bool{}
		var events [][]any
		next := func(i *int) byte {
			*i++
			if *i < len(ops) {
				return ops[*i]
			}
			return 0
		}
		for i := 0; i < len(ops); i++ {
			op := ops[i]
			p := ids[int(op)%4]
			switch op / 32 {
			case 0: // join or leave
				if joined[p] {
					events = append(events, []any{"leave", p})
				} else {
					events = append(events, []any{"join", p, map[string]string{}})
					if p == "p2" || p == "p4" {
						rv.dec[p] = &compact.Decoder{}
					}
				}
				joined[p] = !joined[p]
			case 1, 2, 3: // a write
				if !joined[p] {
					continue
				}
				target := []string{"", "e1", "e2", "e3", "e4", "p1", "p2"}[int(next(&i))%7]
				events = append(events, set(p, target, fields[int(next(&i))%len(fields)], values[int(next(&i))%len(values)]))
			case 4: // spawn or remove
				if joined[p] {
					if op%2 == 0 {
						events = append(events, []any{"cmd", p, "spawn", map[string]any{"type": []string{"mob", "gem"}[int(next(&i))%2]}})
					} else {
						events = append(events, []any{"cmd", p, "remove", map[string]any{"id": "e" + strconv.Itoa(int(next(&i))%6)}})
					}
				}
			case 5: // resume
				if joined[p] {
					events = append(events, []any{"resume", p})
				}
			case 6: // a tick and a send round to those ready
				rv.tick(events...)
				events = nil
				var ready []string
				mask := next(&i)
				for k, id := range ids {
					if joined[id] && mask&(1<<k) != 0 {
						ready = append(ready, id)
					}
				}
				rv.send(ready...)
				rv.converged(ready...)
			case 7: // a reload
				rv.tick(events...)
				events = nil
				rv.v = reloadTo(t, rv.v, versions[int(next(&i))%len(versions)])
				for _, d := range rv.dec {
					if err := d.Text([]byte(`{"t":"types","types":` + string(rv.v.eng.tables()) + `}`)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		rv.tick(events...)
		var all []string
		for _, id := range ids {
			if joined[id] {
				all = append(all, id)
			}
		}
		rv.send(all...)
		rv.converged(all...)
	})
}

// BenchmarkThingWrites is a tick of NOTES.md's measure (70 things, each
// moved in x and y) on three kinds of object: plain JavaScript objects (no
// record at all), things (DynamicObjects whose declared fields are kept in
// Go, a write marking its field), and plain objects whose declared fields
// are accessors made in Go (the other way the issue names). It decides
// which kind the runtime uses.
func BenchmarkThingWrites(b *testing.B) {
	const tick = `(function (things) { for (var id in things) { var e = things[id]; e.x += 0.1; e.y -= 0.1; } })`
	for _, kind := range []string{"plain", "thing", "accessors"} {
		b.Run(kind, func(b *testing.B) {
			v := deltaVM(b, recordGame)
			r := v.rt
			things := r.NewObject()
			for k := range 70 {
				id := "e" + strconv.Itoa(k)
				switch kind {
				case "plain":
					o := r.NewObject()
					o.Set("x", k)
					o.Set("y", k)
					things.Set(id, o)
				case "thing":
					_, o := v.newThing(v.eng.sch.entities["mob"])
					o.Set("x", k)
					o.Set("y", k)
					things.Set(id, o)
				case "accessors":
					o := r.NewObject()
					vals, dirty := []goja.Value{r.ToValue(k), r.ToValue(k)}, []bool{false, false}
					for n, name := range []string{"x", "y"} {
						get := r.ToValue(func(goja.FunctionCall) goja.Value { return vals[n] })
						set := r.ToValue(func(c goja.FunctionCall) goja.Value {
							vals[n], dirty[n] = c.Argument(0), true
							return goja.Undefined()
						})
						o.DefineAccessorProperty(name, get, set, goja.FLAG_FALSE, goja.FLAG_TRUE)
					}
					things.Set(id, o)
				}
			}
			fn, err := r.RunString(tick)
			if err != nil {
				b.Fatal(err)
			}
			call, _ := goja.AssertFunction(fn)
			for b.Loop() {
				if _, err := call(goja.Undefined(), things); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A thing with more undeclared properties than a scan looks through keeps
// them all, in their order, through writes and deletes (they are found
// through a map then).
func TestThingManyProperties(t *testing.T) {
	v := deltaVM(t, recordGame)
	rv := newRecordViewers(t, v)
	rv.tick([]any{"join", "p1", map[string]string{}})
	got, err := v.rt.RunString(`(function () {
  var e = __inst.entities.e1, out = [];
  for (var k = 0; k < 20; k++) e["p" + k] = k;
  delete e.p3; delete e.p15; delete e.x;
  e.p3 = "again"; e.p16 = e.p16 * 2;
  out.push(Object.keys(e).join(","));
  out.push([e.p0, e.p3, e.p15, e.p16, e.p19, "p15" in e, "p14" in e, e.x].join(","));
  return out.join(" | ");
})()`)
	if err != nil {
		t.Fatal(err)
	}
	want := "y,label,speed,id,type,p0,p1,p2,p4,p5,p6,p7,p8,p9,p10,p11,p12,p13,p14,p16,p17,p18,p19,p3 | 0,again,,32,19,false,true,"
	if got.String() != want {
		t.Fatalf("the thing's properties are\n%s\nnot\n%s", got, want)
	}
}
