package runtime

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// pureGame is a game whose visibility hook Go evaluates: every thing has
// x and y; the set command of recordGame writes fields, and others change
// what the hook's Math is or give a thing a field whose value has a side
// effect.
func pureGame(hook string) map[string]string {
	files := map[string]string{
		"hoster-game.json":                `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
		"hoster-player/fields.json":       `{"x": "number", "y": "number"}`,
		"hoster-player/join.js":           `export default function (i, p) { p.x = 0; p.y = 0; }`,
		"hoster-player/visible.js":        hook,
		"hoster-entities/mob/fields.json": `{"x": "number", "y": "number"}`,
		"hoster-instance/create.js":       `export default function (i) { for (let k = 0; k < 4; k++) i.spawn("mob", {x: k * 10, y: 0}); }`,
		"hoster-commands/set/args.json":   recordGame["hoster-commands/set/args.json"],
		"hoster-commands/set/run.js":      recordGame["hoster-commands/set/run.js"],
		"hoster-commands/math/args.json":  `{"how": "string"}`,
		"hoster-commands/math/run.js": `export default function (i, p, a) {
  const far = function () { return 1000; };
  if (a.how === "abs") Math.abs = far;
  if (a.how === "global") globalThis.Math = { abs: far };
  if (a.how === "getter") Object.defineProperty(globalThis.Math, "abs", { get() { return far; } });
}`,
		"hoster-commands/proto/args.json": `{"how": "string"}`,
		"hoster-commands/proto/run.js": `export default function (i, p, a) {
  if (a.how === "object") Object.prototype.hidden = true;
  if (a.how === "getter") Object.defineProperty(Object.prototype, "hidden", { get() { return true; }, configurable: true });
  if (a.how === "thing") Object.setPrototypeOf(i.entities[Object.keys(i.entities)[0]], { hidden: true });
}`,
		// the first mob's x becomes an object whose value, when the hook
		// reads it, moves the second mob far away
		"hoster-commands/trap/args.json": `{}`,
		"hoster-commands/trap/run.js": `export default function (i) {
  const ids = Object.keys(i.entities), second = i.entities[ids[1]];
  i.entities[ids[0]].x = { valueOf() { second.x = 1000; return 0; } };
}`,
	}
	return files
}

const guideHook = `export default function (i, p, t) { return Math.abs(t.x - p.x) < 25 && Math.abs(t.y - p.y) < 25; }`

// pureViewers is a game of pureGame's with players p1 and p2 joined and
// sent their first round.
func pureViewers(t *testing.T, files map[string]string) *recordViewers {
	t.Helper()
	rv := newRecordViewers(t, deltaVM(t, files))
	rv.tick([]any{"join", "p1", map[string]string{}}, []any{"join", "p2", map[string]string{}})
	rv.send("p1", "p2")
	rv.converged("p1", "p2")
	return rv
}

// The hook of the guide and of bench/load is evaluated in Go; a write made
// in the tick before a send round (a command, another hook) is what the
// round's visibility reads, so viewers see things come and go as the
// JavaScript hook says.
func TestPureVisibleSeesWritesAtOnce(t *testing.T) {
	rv := pureViewers(t, pureGame(guideHook))
	if rv.v.pure == nil {
		t.Fatal("the guide's hook is not evaluated in Go")
	}
	ids := rv.v.rt.Get("__inst").(*goja.Object).Get("entities").(*goja.Object).Keys()
	for step, ev := range [][]any{
		set("p1", "", "x", "30"),       // p1 moves away from mob 0, towards mob 3
		set("p1", ids[3], "x", "-500"), // the mob goes out of its sight
		set("p2", "p1", "y", "40"),     // p2 moves p1 out of its sight
		set("p1", "", "x", "null"),     // null - 0 is 0
		set("p1", ids[0], "y", `"0"`),  // a string: JavaScript's answer, in the records
		set("p1", ids[0], "y", "undefined"),
	} {
		rv.tick(ev)
		rv.send("p1", "p2")
		rv.converged("p1", "p2")
		if step == 0 && len(rv.models["p1"]) != 4 { // itself, p2 is at 30, mobs 1..3
			t.Fatalf("p1 knows %v", rv.models["p1"])
		}
	}
}

// Math is looked up where the hook finds it: a game that replaces Math.abs,
// Math itself, or makes Math.abs a getter, gets its own Math from then on.
func TestPureVisibleFollowsAReplacedMath(t *testing.T) {
	for _, how := range []string{"abs", "global", "getter"} {
		t.Run(how, func(t *testing.T) {
			rv := pureViewers(t, pureGame(guideHook))
			if rv.v.pure == nil {
				t.Fatal("the guide's hook is not evaluated in Go")
			}
			if len(rv.models["p1"]) < 2 {
				t.Fatalf("p1 knows %v", rv.models["p1"])
			}
			rv.tick([]any{"cmd", "p1", "math", map[string]any{"how": how}})
			rv.send("p1", "p2")
			rv.converged("p1", "p2")
			if len(rv.models["p1"]) != 0 {
				t.Fatalf("with abs always 1000, p1 still knows %v", rv.models["p1"])
			}
		})
	}
}

// A module that binds a Math of its own (here the hook's) is never
// evaluated in Go: its hook means that Math.
func TestPureVisibleLeavesAModulesOwnMath(t *testing.T) {
	hook := `const Math = { abs: function () { return 1000; } };
export default function (i, p, t) { return Math.abs(t.x - p.x) < 25; }`
	files := pureGame(hook)
	for _, f := range []string{"hoster-commands/math/run.js", "hoster-commands/math/args.json"} {
		delete(files, f) // no other module names the global Math, which bundling would rename the hook's for
	}
	rv := pureViewers(t, files)
	source, _ := goja.AssertFunction(rv.v.rt.Get("__js").(*goja.Object).Get("source"))
	if src, err := source(goja.Undefined(), rv.v.visibleV); err != nil || !strings.Contains(src.String(), "Math.abs") {
		t.Fatalf("the bundled hook does not name Math: %v %v", src, err)
	}
	if rv.v.pure != nil {
		t.Fatal("a hook with the module's own Math is evaluated in Go")
	}
	if len(rv.models["p1"]) != 0 {
		t.Fatalf("p1 knows %v", rv.models["p1"])
	}
}

// An operand Go does not follow hands the rest of the round to the
// JavaScript hook, in the order it would have been called: here the first
// mob's x is an object whose valueOf, run by the hook, moves the second mob
// away before the hook is asked about it.
func TestPureVisibleFallsBackInOrder(t *testing.T) {
	rv := pureViewers(t, pureGame(`export default function (i, p, t) { return Math.abs(t.x - p.x) < 25; }`))
	if rv.v.pure == nil {
		t.Fatal("the hook is not evaluated in Go")
	}
	ids := rv.v.rt.Get("__inst").(*goja.Object).Get("entities").(*goja.Object).Keys()
	if _, ok := rv.models["p1"][ids[1]]; !ok {
		t.Fatalf("p1 does not know the second mob: %v", rv.models["p1"])
	}
	rv.tick([]any{"cmd", "p1", "trap", map[string]any{}})
	rv.send("p1")
	if _, ok := rv.models["p1"][ids[1]]; ok {
		t.Fatalf("p1 still knows the second mob, moved away by the hook's read of the first: %v", rv.models["p1"])
	}
}

// A property no thing has reads as undefined, from the things' prototype,
// Object.prototype; a game that gives Object.prototype or a thing's
// prototype that property gets what JavaScript reads.
func TestPureVisibleReadsALackedProperty(t *testing.T) {
	const hook = `export default function (i, p, t) { return t.hidden !== true && Math.abs(t.x - p.x) < 25; }`
	for _, how := range []string{"object", "getter", "thing"} {
		t.Run(how, func(t *testing.T) {
			rv := pureViewers(t, pureGame(hook))
			if rv.v.pure == nil || !rv.v.pure.unset {
				t.Fatal("the hook is not evaluated in Go, or a property things lack is not read as undefined")
			}
			before := len(rv.models["p1"])
			rv.tick([]any{"cmd", "p1", "proto", map[string]any{"how": how}})
			rv.send("p1", "p2")
			rv.converged("p1", "p2")
			want := 0 // everything is hidden
			if how == "thing" {
				want = before - 1
			}
			if len(rv.models["p1"]) != want {
				t.Fatalf("p1 knows %v", rv.models["p1"])
			}
		})
	}
}

// The hooks Go evaluates, and some it leaves to goja.
func TestCompilePure(t *testing.T) {
	r := goja.New()
	for _, src := range []string{
		"function visible_default(i, p, t) {\n  return Math.abs(t.x - p.x) < 25 && Math.abs(t.y - p.y) < 25;\n}",
		"function visible(instance, player, thing) { return Math.abs(thing.x - player.x) < 40; }",
		"(i, me, t) => t.id === me.id || (t.x - me.x) * (t.x - me.x) + (t.y - me.y) * (t.y - me.y) <= 100",
		"(i, p, t) => { return t.type === \"mob\" ? !t.hidden : Math.max(p.x, t.x, 3) > 2; }",
		"function (i, p, t) { return t.team == null || t.team !== p.team; }",
	} {
		if compilePure(r, src) == nil {
			t.Errorf("not evaluated in Go: %s", src)
		}
	}
	for _, src := range []string{
		"function (i, p, t) { return i.state.open; }",        // the instance
		"function (i, p, t) { return near(p, t); }",          // another function
		"function (i, p, t) { return t.x < R; }",             // a free variable
		"function (i, p, t) { return t.x / 2 < 1; }",         // an operator it does not follow
		"function (i, p, t) { return t.x % 2 === p.x % 2; }", // ditto
		"function (i, p, t) { p.seen = 1; return true; }",    // a statement
		"function (i, p, t) { return (p.n = 1); }",           // an assignment
		"function (i, p, t) { return this.x; }",              // this
		"function (i, p, t) { return p[t.id]; }",             // a computed property
		"function (i, p, t) { return Math.random() < 0.5; }", // not one of its functions
		"function (i, p, t) { return Math.abs; }",            // not a call
		"function (i, p, t) { return typeof t.x === \"number\"; }",
		"function (i, p, Math) { return Math.abs(p.x) < 1; }", // Math a parameter
		"function (i, p, t, u) { return true; }",              // a fourth parameter
		"function (i, p, p) { return p.x < 1; }",              // a duplicate
		"function (i, p = {}, t) { return p.x < 1; }",         // a default
		"async function (i, p, t) { return true; }",
		"function* (i, p, t) { return true; }",
		"function () { [native code] }",
		"class A {}",
	} {
		if compilePure(r, src) != nil {
			t.Errorf("evaluated in Go: %s", src)
		}
	}
}

func TestMathUnbound(t *testing.T) {
	for src, want := range map[string]bool{
		`(() => { function v(i, p, t) { return Math.abs(t.x) < Math.max(1, 2); } globalThis.h = v; })();`: true,
		`(() => { var Math = { abs: x => x }; })();`:                                                      false,
		`(() => { function f(Math) { return Math.abs(1); } })();`:                                         false,
		`(() => { try {} catch (Math) {} })();`:                                                           false,
		`(() => { class Math {} })();`:                                                                    false,
		`(() => { var { Math } = globalThis; })();`:                                                       false,
		`(() => { eval("var Math = 1"); })();`:                                                            false,
		`(() => { var M\u0061th = 1; })();`:                                                               false,
		`this is not JavaScript`:                                                                          false,
	} {
		if got := mathUnbound([]byte(src)); got != want {
			t.Errorf("mathUnbound(%s) = %v, want %v", src, got, want)
		}
	}
}

// Go's answer, whenever it gives one, is goja's: random expressions of
// the kinds a pure hook has, and some it has not, over random properties
// (numbers, -0, NaN, infinities, strings, booleans, null, undefined,
// objects, missing), each asked of Go and of goja.
func TestPureHookAgreesWithGoja(t *testing.T) {
	followed, asked := agreeWithGoja(t, deltaVM(t, pureGame(guideHook)), rand.New(rand.NewPCG(3, 4)), 4000)
	if followed < asked/4 {
		t.Fatalf("Go answered %d of %d", followed, asked)
	}
	t.Logf("Go answered %d of %d", followed, asked)
}

// FuzzPureHook is TestPureHookAgreesWithGoja from other seeds.
func FuzzPureHook(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	v := deltaVM(f, pureGame(guideHook))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		agreeWithGoja(t, v, rand.New(rand.NewPCG(a, b)), 20)
	})
}

// agreeWithGoja asks Go and goja about exprs random expressions, each
// over 8 random pairs of things, and fails at the first answer of Go's
// that is not goja's; it returns how many of the answers Go gave.
func agreeWithGoja(t *testing.T, v *vm, rng *rand.Rand, exprs int) (followed, asked int) {
	r := v.rt
	values := []func() goja.Value{
		func() goja.Value { return r.ToValue(rng.IntN(7) - 3) },
		func() goja.Value {
			return r.ToValue([]float64{0.5, -0.5, 2.5, 1e300, -1e-300, 1 << 53, 1<<53 + 2}[rng.IntN(7)])
		},
		func() goja.Value {
			return r.ToValue([]float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}[rng.IntN(4)])
		},
		func() goja.Value { return r.ToValue([]string{"", "a", "1", "b"}[rng.IntN(4)]) },
		func() goja.Value { return r.ToValue(rng.IntN(2) == 0) },
		func() goja.Value { return goja.Null() },
		func() goja.Value { return goja.Undefined() },
		func() goja.Value { return r.NewObject() },
		nil, // missing
	}
	fill := func(th *thing) {
		for _, k := range []string{"x", "y", "u", "w"} { // x, y declared; u, w not
			if f := values[rng.IntN(len(values))]; f != nil {
				th.Set(k, f())
			} else {
				th.Delete(k)
			}
		}
	}
	inst := r.NewObject()
	pt, po := v.newThing(v.eng.typeOf(playerType))
	tt, to := v.newThing(v.eng.typeOf("mob"))
	for range exprs {
		src := "function (i, p, t) { return " + randomExpr(rng, 3) + "; }"
		h := compilePure(r, src)
		if h == nil {
			continue
		}
		fn, err := r.RunString("(" + src + ")")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		call, _ := goja.AssertFunction(fn)
		for n := range 8 {
			h.unset = n%2 == 0 // a property the things lack reads as undefined
			fill(pt)
			fill(tt)
			asked++
			got, ok := h.sees(pt, tt)
			if !ok {
				continue
			}
			followed++
			res, err := call(goja.Undefined(), inst, po, to)
			if err != nil {
				t.Fatalf("%s threw %v, but Go answered %v", src, err, got)
			}
			if want := res.ToBoolean(); got != want {
				t.Fatalf("%s with p %s and t %s: Go says %v, goja %v", src, props(pt), props(tt), got, want)
			}
		}
	}
	return followed, asked
}

// randomExpr is a random expression of at most depth levels.
func randomExpr(rng *rand.Rand, depth int) string {
	leaf := []string{"p.x", "t.x", "p.y", "t.y", "t.u", "p.w", "0", "1", "-1", "25", "2.5", "0.1", `"a"`, `""`, "true", "false", "null"}
	if depth == 0 || rng.IntN(4) == 0 {
		return leaf[rng.IntN(len(leaf))]
	}
	sub := func() string { return randomExpr(rng, depth-1) }
	switch rng.IntN(6) {
	case 0:
		return []string{"-", "+", "!"}[rng.IntN(3)] + "(" + sub() + ")"
	case 1, 2:
		ops := []string{"+", "-", "*", "<", "<=", ">", ">=", "===", "!==", "==", "!=", "&&", "||", "/"}
		return "(" + sub() + " " + ops[rng.IntN(len(ops))] + " " + sub() + ")"
	case 3:
		return "(" + sub() + " ? " + sub() + " : " + sub() + ")"
	case 4:
		fn := []string{"abs", "sqrt", "floor", "ceil", "min", "max"}[rng.IntN(6)]
		args := make([]string, rng.IntN(4))
		for k := range args {
			args[k] = sub()
		}
		return "Math." + fn + "(" + strings.Join(args, ", ") + ")"
	}
	return "(" + sub() + " - " + sub() + ") * " + sub()
}

// props is a thing's properties, for a failure's message.
func props(th *thing) string {
	m := map[string]string{}
	for _, k := range th.Keys() {
		m[k] = th.Get(k).String()
	}
	return fmt.Sprint(maps.Collect(maps.All(m)))
}
