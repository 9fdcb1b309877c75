package runtime

import (
	"encoding/json"
	"slices"
	"testing"
)

// The entities' ticks walk the entities as they were when the tick began,
// each one as it is when its turn comes: one an earlier tick removed is
// skipped, one it replaced runs as its replacement, one it spawned waits
// for the next tick; one whose type a tick changed runs its new type's.
func TestEntityTicksSeeEarlierTicksChanges(t *testing.T) {
	files := map[string]string{
		"hoster-game.json":                `{"tickRate": 10, "sendRate": 10, "capacity": 4, "origins": ["*"]}`,
		"hoster-player/fields.json":       `{"x": "number"}`,
		"hoster-entities/box/fields.json": `{"n": "integer"}`,
		"hoster-entities/gem/fields.json": `{"n": "integer"}`,
		"hoster-instance/create.js":       `export default function (i) { i.state.seen = []; i.spawn("box", {}); i.spawn("box", {}); i.spawn("box", {}); i.spawn("gem", {}); }`,
		"hoster-entities/box/tick.js": `export default function (i, e) {
  i.state.seen.push("box " + e.id);
  if (e.id === "e1" && !i.state.done) { i.state.done = true; i.remove("e2"); i.entities.e3 = i.spawn("gem", {}); }
}`,
		"hoster-entities/gem/tick.js": `export default function (i, e) {
  i.state.seen.push("gem " + e.id);
  if (e.id === "e4") e.type = "box";
}`,
	}
	tg := testGame(t, files)
	if _, err := tg.Join(nil); err != nil {
		t.Fatal(err)
	}
	var state struct{ Seen []string }
	for len(state.Seen) < 7 {
		if err := tg.Advance(100e6); err != nil {
			t.Fatal(err)
		}
		raw, err := tg.State()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &state); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"box e1", "gem e5", "gem e4", "box e1", "gem e5", "box e4", "gem e5"}
	if !slices.Equal(state.Seen[:7], want) {
		t.Fatalf("the ticks ran as %q, want %q", state.Seen, want)
	}
}
