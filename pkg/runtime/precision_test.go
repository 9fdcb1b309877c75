package runtime

import (
	"testing"
)

// A number field with a precision goes on the wire rounded to it (as the
// short decimal for a power of ten), its own player's private fields too,
// and a change smaller than half a step is not sent.
func TestPrecisionOnTheWire(t *testing.T) {
	game := map[string]string{
		"hoster-game.json": cfg(4),
		"hoster-player/fields.json": `{"x": {"type": "number", "precision": 0.01}, "h": {"type": "number", "precision": 0.5},
  "s": {"type": "number", "precision": 0.001, "private": true}, "raw": "number"}`,
		"hoster-player/join.js":         `export default function (i, p) { p.x = 1 / 3; p.h = 1.3; p.s = 2 / 3; p.raw = 1 / 3; }`,
		"hoster-commands/set/args.json": `{"x": "number", "h": "number"}`,
		"hoster-commands/set/run.js":    `export default function (i, p, a) { p.x = a.x; p.h = a.h; }`,
	}
	e := start(t, map[string]map[string]string{"a.example/prec": game})
	c := e.join(t, "a.example", "prec", "c")
	u := c.next("update")
	appear := u["appear"].([]any)[0].(map[string]any)["f"].(map[string]any)
	if appear["x"] != 0.33 || appear["h"] != 1.5 || appear["s"] != 0.667 || appear["raw"] != 1.0/3 {
		t.Fatalf("appeared as %v, want x 0.33, h 1.5, s 0.667 and raw 1/3 unrounded", appear)
	}

	// x moves by less than half a step: only h's change is sent.
	c.send("set", map[string]any{"x": 0.334, "h": 2.2})
	for {
		u = c.next("update")
		ch, _ := u["change"].([]any)
		if len(ch) == 0 {
			continue
		}
		f := ch[0].(map[string]any)["f"].(map[string]any)
		if _, ok := f["x"]; ok {
			t.Fatalf("a change of x smaller than its precision was sent: %v", f)
		}
		if f["h"] != 2.0 {
			t.Fatalf("h sent as %v, want 2 (2.2 to the nearest 0.5)", f["h"])
		}
		break
	}
	c.send("set", map[string]any{"x": 12.3456, "h": 2.2})
	c.until("x rounded to 12.35", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 12.35 })
}
