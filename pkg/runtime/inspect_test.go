package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
)

// peek is a game for the introspection API: ctl's hooks, a private field,
// a box only ada sees, and a command that makes the state unencodable.
func peek() map[string]string {
	files := ctl()
	files["hoster-player/fields.json"] = `{"name": "string", "x": "number", "t": "integer", "hits": "integer", "secret": {"type": "string", "private": true}}`
	files["hoster-player/join.js"] = `export default function (i, p, params) { p.name = params.name || "anon"; p.x = 0; p.t = 0; p.hits = 0; p.secret = "s-" + p.name; }`
	files["hoster-player/visible.js"] = `export default function (i, me, thing) { return !thing.type || me.name === "ada"; }`
	files["hoster-instance/create.js"] = `export default function (i, params) { i.state.ticks = 0; i.spawn("box", {n: 1}); }`
	files["hoster-commands/cycle/args.json"] = `{}`
	files["hoster-commands/cycle/run.js"] = `export default function (i) { i.state.self = i.state; }`
	return files
}

// inspect reads instance id (and player's view) into v, failing the test
// on an error.
func inspect(t *testing.T, rt *Runtime, id, player string) (state map[string]any, view map[string]any) {
	t.Helper()
	res, err := rt.Inspect(context.Background(), "a.example", "peek", id, player)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(res.State, &state)
	if player != "" {
		json.Unmarshal(res.View, &view)
	}
	return state, view
}

// Overview and Inspect, called over and over from other goroutines while
// the instance ticks and its players play, read what the instance knows
// without racing it (run under -race): players, timings, hook errors with
// file:line, the state as it changes, and each player's view as its own
// viewer was sent it.
func TestInspectWhileTicking(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/peek": peek()})
	ada := e.join(t, "a.example", "peek", "ada")
	bob := e.join(t, "a.example", "peek", "bob")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, g := range e.rt.Overview() {
					for _, in := range g.Instances {
						e.rt.Inspect(context.Background(), "a.example", "peek", in.ID, ada.me)
					}
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	// The state changes from one inspection to the next: each answers after
	// its own tick.
	first, _ := inspect(t, e.rt, ada.inst, "")
	for {
		now, _ := inspect(t, e.rt, ada.inst, "")
		if now["ticks"].(float64) > first["ticks"].(float64) {
			break
		}
	}

	// A hook error is kept with the author's file:line.
	bob.send("boom", nil)
	bob.next("error")
	var ov []GameOverview
	for {
		ov = e.rt.Overview()
		if len(ov) == 1 && len(ov[0].Errors) > 0 {
			break
		}
	}
	g := ov[0]
	if g.Game != "a.example/peek" || g.TickRate != 50 || g.SendRate != 25 || len(g.Instances) != 1 {
		t.Fatalf("overview %+v", g)
	}
	if err := g.Errors[0]; err.Hook != "command boom" || err.At != "hoster-commands/boom/run.js:2" ||
		err.Instance != ada.inst || !strings.Contains(err.Error, "null") {
		t.Fatalf("hook error %+v", err)
	}
	in := g.Instances[0]
	want := []PlayerSummary{{ID: ada.me, Connected: true}, {ID: bob.me, Connected: true}}
	if in.ID != ada.inst || in.Seats != 2 || len(in.Players) != 2 || in.Players[0] != want[0] || in.Players[1] != want[1] {
		t.Fatalf("instance %+v, want players %+v", in, want)
	}
	if in.Tick.Count == 0 || in.Send.Count == 0 || in.Tick.MaxMs < in.Tick.MeanMs {
		t.Fatalf("timings: tick %+v send %+v", in.Tick, in.Send)
	}

	// Each view is what its viewer was sent: ada sees the box and her own
	// secret; bob no box, and not ada's secret.
	ada.until("the box", func(m map[string]map[string]any) bool { return len(m) == 3 })
	bob.until("both players", func(m map[string]map[string]any) bool { return len(m) == 2 })
	_, av := inspect(t, e.rt, ada.inst, ada.me)
	_, bv := inspect(t, e.rt, ada.inst, bob.me)
	if len(av["things"].(map[string]any)) != 3 || av["private"].(map[string]any)["secret"] != "s-ada" {
		t.Fatalf("ada's view %v", av)
	}
	if things := bv["things"].(map[string]any); len(things) != 2 || bv["private"].(map[string]any)["secret"] != "s-bob" {
		t.Fatalf("bob's view %v", bv)
	}
	if f := bv["things"].(map[string]any)[ada.me].(map[string]any)["f"].(map[string]any); f["name"] != "ada" || f["secret"] != nil {
		t.Fatalf("ada as bob sees her: %v", f)
	}
	if _, none := inspect(t, e.rt, ada.inst, "p99"); none != nil {
		t.Fatalf("the view of no player: %v", none)
	}

	// A state JSON cannot hold spoils only itself.
	ada.send("cycle", nil)
	for {
		res, err := e.rt.Inspect(context.Background(), "a.example", "peek", ada.inst, "")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(res.State), "unreadable") {
			if !strings.Contains(string(res.Players), `"ada"`) {
				t.Fatalf("players %s", res.Players)
			}
			break
		}
	}

	// An instance or game that is not there.
	for _, c := range [][2]string{{"peek", "nope"}, {"nope", ada.inst}} {
		if _, err := e.rt.Inspect(context.Background(), "a.example", c[0], c[1], ""); !errors.Is(err, ErrNoInstance) {
			t.Fatalf("%v: %v", c, err)
		}
	}
}

// A closed instance is neither listed nor inspected.
func TestInspectOfAClosedInstance(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/peek": peek()})
	ada := e.join(t, "a.example", "peek", "ada")
	ada.send("end", nil)
	ada.closed(t)
	if _, err := e.rt.Inspect(context.Background(), "a.example", "peek", ada.inst, ""); !errors.Is(err, ErrNoInstance) {
		t.Fatalf("after the close: %v", err)
	}
	for _, g := range e.rt.Overview() {
		if len(g.Instances) != 0 {
			t.Fatalf("a closed instance is listed: %+v", g.Instances)
		}
	}
}

// An instance closed by a failing hook is kept among the game's errors,
// with the author's file:line, after it is gone.
func TestOverviewKeepsTheFailureThatClosedAnInstance(t *testing.T) {
	files := lab(4)
	files["hoster-instance/create.js"] = "export default function (i) {\n  i.state.x = null.y;\n}"
	e := start(t, map[string]map[string]string{"a.example/broken": files})
	c, _, err := e.dial(t, "a.example", "/broken", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code := c.closed(t); code != 1011 {
		t.Fatalf("closed with %d, want 1011", code)
	}
	ov := e.rt.Overview()
	if len(ov) != 1 || len(ov[0].Instances) != 0 || len(ov[0].Errors) != 1 {
		t.Fatalf("overview %+v", ov)
	}
	if err := ov[0].Errors[0]; err.Hook != "instance" || err.At != "hoster-instance/create.js:2" || !strings.Contains(err.Error, "create") {
		t.Fatalf("the failure %+v", err)
	}
}
