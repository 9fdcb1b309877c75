package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/gen"
)

// loadBenchGame is bench/load's game: players moved by a command, 50
// wandering entities each moving every fifth tick, x and y at precision
// 0.0001, ticks at 20 Hz and send rounds at 10 Hz. visible adds its
// visibility hook (what is within 25 units).
func loadBenchGame(visible bool) map[string]string {
	number := `{"type": "number", "precision": 0.0001}`
	fields := fmt.Sprintf(`{"x": %s, "y": %s}`, number, number)
	files := map[string]string{
		"hoster-game.json":                `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
		"hoster-player/fields.json":       fields,
		"hoster-player/join.js":           `export default function (i, p) { p.x = Math.random() * 100; p.y = Math.random() * 100; }`,
		"hoster-entities/mob/fields.json": fields,
		"hoster-entities/mob/tick.js": `export default function (i, e, dt) {
  e.t = (e.t || 0) + 1;
  if (e.t % 5 === 0) { e.x = (e.x + 1) % 100; }
}`,
		"hoster-instance/create.js": `export default function (i) {
  for (let k = 0; k < 50; k++) i.spawn("mob", { x: Math.round(Math.random() * 100), y: Math.round(Math.random() * 100), t: k });
}`,
		"hoster-commands/move/args.json": `{"dx": {"type": "number", "min": -1, "max": 1}, "dy": {"type": "number", "min": -1, "max": 1}}`,
		"hoster-commands/move/run.js":    `export default function (i, p, a) { p.x += a.dx; p.y += a.dy; }`,
	}
	if visible {
		files["hoster-player/visible.js"] = `export default function (i, p, t) { return Math.abs(t.x - p.x) < 25 && Math.abs(t.y - p.y) < 25; }`
	}
	return files
}

// loadBench is one instance of the load game with 20 players, outside any
// network (a TestGame), whose send rounds the benchmark runs itself.
type loadBench struct {
	tg      *TestGame
	ti      *TestInstance
	players []*TestPlayer
}

func newLoadBench(b *testing.B, visible, compact bool) *loadBench {
	b.Helper()
	root := b.TempDir()
	dir := filepath.Join(root, "load.example", "load")
	for rel, body := range loadBenchGame(visible) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		b.Fatal(err, res.Problems())
	}
	tg, err := NewTestGame(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(tg.Close)
	lb := &loadBench{tg: tg}
	for range 20 {
		p, err := tg.Join(nil)
		if err != nil {
			b.Fatal(err)
		}
		p.c.compact = compact
		lb.players = append(lb.players, p)
	}
	lb.ti = lb.players[0].Instance()
	if len(tg.Instances()) != 1 {
		b.Fatalf("%d instances, want 1", len(tg.Instances()))
	}
	// The benchmark runs the send rounds, and no stats line is due.
	lb.ti.l.nextSend = testEpoch.Add(1000 * time.Hour)
	lb.ti.l.nextStats = lb.ti.l.nextSend
	tg.deliver()
	return lb
}

// moves sends a move command from every other player (from from), as the
// load test's bots do, ten a second each at 20 ticks a second.
func (lb *loadBench) moves(b *testing.B, from int) {
	for k := from; k < len(lb.players); k += 2 {
		if err := lb.players[k].Send("move", []byte(`{"dx": 0.5, "dy": -0.25}`)); err != nil {
			b.Fatal(err)
		}
	}
}

// tick runs the instance's next tick (its send round not due).
func (lb *loadBench) tick(b *testing.B) {
	l := lb.ti.l
	at := l.last.Add(l.step)
	lb.tg.clk.set(at)
	if !lb.ti.in.step(l, at) {
		b.Fatal("the instance ended: ", lb.tg.logs.last())
	}
}

// drain takes what was queued on the players' sockets, unread.
func (lb *loadBench) drain() {
	for _, p := range lb.players {
		p.c.mu.Lock()
		p.c.queue, p.c.queued, p.c.updates = p.c.queue[:0], 0, 0
		p.c.mu.Unlock()
	}
}

// BenchmarkTick is one tick of bench/load's game (20 players, 50
// entities), with the ten move commands that arrive in a tick.
func BenchmarkTick(b *testing.B) {
	lb := newLoadBench(b, false, true)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		lb.moves(b, i%2)
		b.StartTimer()
		lb.tick(b)
	}
}

// BenchmarkSendRound is one send round of bench/load's game: 20 viewers in
// step, every player moved since the last round, a tenth of the entities
// changed; in both encodings, without and with its visibility hook.
func BenchmarkSendRound(b *testing.B) {
	for _, visible := range []bool{false, true} {
		for _, format := range []string{"json", "compact"} {
			name := "shared/" + format
			if visible {
				name = "visible/" + format
			}
			b.Run(name, func(b *testing.B) {
				lb := newLoadBench(b, visible, format == "compact")
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					lb.moves(b, 0)
					lb.tick(b)
					lb.moves(b, 1)
					lb.tick(b)
					lb.drain()
					b.StartTimer()
					if err := lb.ti.in.sendRound(lb.ti.l.v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
