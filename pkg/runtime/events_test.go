package runtime

import (
	"fmt"
	"testing"
)

// BenchmarkTickEvents is one tick of the load game's instance carrying what
// its 20 players send in a tick at 10 moves a second each: 10 commands,
// handed from Go to JavaScript as the runtime does.
func BenchmarkTickEvents(b *testing.B) {
	v, _ := benchInstanceOf(b, map[string]string{
		"hoster-game.json":               `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
		"hoster-player/fields.json":      `{"x": "number", "y": "number"}`,
		"hoster-player/join.js":          `export default function (i, p) { p.x = 1; p.y = 2; }`,
		"hoster-commands/move/args.json": `{"dx": {"type": "number", "min": -1, "max": 1}, "dy": {"type": "number", "min": -1, "max": 1}}`,
		"hoster-commands/move/run.js":    `export default function (i, p, a) { p.x += a.dx; p.y += a.dy; }`,
	})
	var events []event
	for p := 1; p <= 10; p++ {
		events = append(events, event{kind: "cmd", player: fmt.Sprintf("p%d", p), name: "move", args: map[string]any{"dx": 1.0, "dy": -1.0}})
	}
	for i := 0; b.Loop(); i++ {
		if _, err := v.tickAt(0.05, int64(i), events); err != nil {
			b.Fatal(err)
		}
	}
}

// Join parameters and command arguments reach the hooks as plain own
// properties, whatever their names, as JSON.parse made them before.
func TestEventsAreOwnProperties(t *testing.T) {
	v := deltaVM(t, map[string]string{
		"hoster-game.json":              `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
		"hoster-player/fields.json":     `{"seen": "string"}`,
		"hoster-player/join.js":         `export default function (i, p, params) { p.seen = Object.keys(params).join(",") + "=" + params["__proto__"]; }`,
		"hoster-commands/say/args.json": `{"n": "number", "s": "string", "b": "boolean"}`,
		"hoster-commands/say/run.js":    `export default function (i, p, a) { p.seen = JSON.stringify(a); }`,
	})
	tick := func(events ...event) string {
		if _, err := v.tickAt(0.05, int64(0), events); err != nil {
			t.Fatal(err)
		}
		return v.rt.Get("__inst").ToObject(v.rt).Get("players").ToObject(v.rt).Get("p1").ToObject(v.rt).Get("seen").String()
	}
	if got := tick(event{kind: "join", player: "p1", params: map[string]string{"name": "n", "__proto__": "x"}}); got != "__proto__,name=x" {
		t.Errorf("join saw the params as %q", got)
	}
	if got := tick(event{kind: "cmd", player: "p1", name: "say", args: map[string]any{"s": "hi", "n": 1.5, "b": true}}); got != `{"b":true,"n":1.5,"s":"hi"}` {
		t.Errorf("the command saw its arguments as %s", got)
	}
}
