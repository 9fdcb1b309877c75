package runtime

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/dop251/goja"
)

// benchInstance is an instance of a game with 20 players and 50 entities
// that all change every tick, outside any socket.
func benchInstance(b *testing.B) (*vm, []any) {
	return benchInstanceOf(b, map[string]string{
		"hoster-game.json":                `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
		"hoster-player/fields.json":       `{"x": "number", "y": "number", "name": "string"}`,
		"hoster-player/join.js":           `export default function (i, p) { p.x = 1; p.y = 2; p.name = "bot"; }`,
		"hoster-entities/mob/fields.json": `{"x": "number", "y": "number"}`,
		"hoster-entities/mob/tick.js":     `export default function (i, e, dt) { e.x += dt; }`,
		"hoster-instance/create.js":       `export default function (i) { for (let k = 0; k < 50; k++) i.spawn("mob", {x: k, y: k}); }`,
		"hoster-instance/tick.js":         `export default function (i, dt) { for (const id in i.players) i.players[id].x += dt; }`,
	})
}

// benchInstanceOf starts an instance of the game in files, outside any
// socket, with 20 players joined.
func benchInstanceOf(b *testing.B, files map[string]string) (*vm, []any) {
	v := deltaVM(b, files)
	var joins []any
	var ready []any
	for p := 1; p <= 20; p++ {
		id := fmt.Sprintf("p%d", p)
		joins = append(joins, []any{"join", id, map[string]string{}})
		ready = append(ready, id)
	}
	ev, _ := json.Marshal(joins)
	if _, err := v.tickAt(0.05, int64(0), jsonEvents(b, string(ev))); err != nil {
		b.Fatal(err)
	}
	return v, ready
}

// BenchmarkBoundary compares one tick plus one send round for 20 viewers
// done the runtime's way (the declared fields kept in Go, the send round
// in Go) with exporting the players and entities to Go every tick and
// encoding there, the way the issue warns against.
func BenchmarkBoundary(b *testing.B) {
	b.Run("go-side-deltas", func(b *testing.B) {
		v, ready := benchInstance(b)
		for i := 0; i < b.N; i++ {
			v.tickAt(0.05, int64(i), nil)
			if out := sendVM(b, v, ready, nil); len(out) != 20 {
				b.Fatalf("%d messages", len(out))
			}
		}
	})
	b.Run("export-to-go", func(b *testing.B) {
		v, ready := benchInstance(b)
		for i := 0; i < b.N; i++ {
			v.tickAt(0.05, int64(i), nil)
			inst := v.rt.Get("__inst").(*goja.Object)
			players := inst.Get("players").Export()
			entities := inst.Get("entities").Export()
			for range ready { // one full state message per viewer, no diffing at all
				if _, err := json.Marshal(map[string]any{"players": players, "entities": entities}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
