package runtime

import (
	"testing"

	"github.com/dop251/goja"
)

func BenchmarkZZBody(b *testing.B) {
	files := map[string]string{
		"hoster-game.json":                `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
		"hoster-player/fields.json":       `{"x": {"type": "number", "precision": 0.0001}, "y": {"type": "number", "precision": 0.0001}}`,
		"hoster-player/join.js":           `export default function (i, p) { p.x = Math.random() * 100; p.y = 2; }`,
		"hoster-entities/mob/fields.json": `{"x": {"type": "number", "precision": 0.0001}, "y": {"type": "number", "precision": 0.0001}}`,
		"hoster-entities/mob/tick.js":     `export default function (i, e, dt) { e.t = (e.t || 0) + 1; if (e.t % 5 === 0) e.x = (e.x + 1) % 100; }`,
		"hoster-instance/create.js":       `export default function (i) { for (let k = 0; k < 50; k++) i.spawn("mob", {x: k, y: k, t: k}); }`,
		"hoster-instance/tick.js":         `export default function (i, dt) { for (const id in i.players) { i.players[id].x += 0.37; i.players[id].y -= 0.21; } }`,
	}
	v, ready := benchInstanceOf(b, files)
	v.call(v.send, v.rt.ToValue(ready))
	v.call(v.tick, v.rt.ToValue(0.05), v.rt.ToValue(1), v.rt.NewArray())
	v.call(v.tick, v.rt.ToValue(0.05), v.rt.ToValue(2), v.rt.NewArray())
	v.call(v.send, v.rt.ToValue(ready))
	v.rt.RunString(`var __D = __since(__round - 1); __log = function(){}; `)
	for _, f := range []string{"__body", "__cbody"} {
		b.Run(f, func(b *testing.B) {
			fn, _ := goja.AssertFunction(v.rt.Get(f))
			d := v.rt.Get("__D")
			n, _ := v.rt.RunString("__D.change.length")
			for b.Loop() {
				v.bodies.reset()
				fn(goja.Undefined(), d)
			}
			b.ReportMetric(float64(n.ToInteger()), "changes")
		})
	}
}
