package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/gen"
)

// loadGameFiles is bench/load's game: 20 players a room, 50 wandering
// entities, 20 Hz ticks, 10 Hz updates, precision 0.0001. spin adds a
// game tick that busies its thread for that long every tick.
func loadGameFiles(spin time.Duration) map[string]string {
	number := `{"type": "number", "precision": 0.0001}`
	fields := fmt.Sprintf(`{"x": %s, "y": %s}`, number, number)
	files := map[string]string{
		"hoster-game.json":                `{"tickRate": 20, "sendRate": 10, "capacity": 20, "origins": ["*"]}`,
		"hoster-player/fields.json":       fields,
		"hoster-player/join.js":           `export default function (i, p) { p.x = Math.random() * 100; p.y = Math.random() * 100; }`,
		"hoster-entities/mob/fields.json": fields,
		"hoster-entities/mob/tick.js":     `export default function (i, e, dt) { e.t = (e.t || 0) + 1; if (e.t % 5 === 0) { e.x = (e.x + 1) % 100; } }`,
		"hoster-instance/create.js":       `export default function (i) { for (let k = 0; k < 50; k++) i.spawn("mob", { x: Math.round(Math.random() * 100), y: Math.round(Math.random() * 100), t: k }); }`,
		"hoster-commands/move/args.json":  `{"dx": {"type": "number", "min": -1, "max": 1}, "dy": {"type": "number", "min": -1, "max": 1}}`,
		"hoster-commands/move/run.js":     `export default function (i, p, a) { p.x += a.dx; p.y += a.dy; }`,
	}
	if spin > 0 {
		files["hoster-instance/tick.js"] = fmt.Sprintf(`export default function () { const end = Date.now() + %d; while (Date.now() < end) {} }`, spin.Milliseconds())
	}
	return files
}

// discardRaw is a socket that takes every write at once, counting them.
type discardRaw struct{ writes *atomic.Int64 }

func (d discardRaw) tryWrite(p []byte) (int, error) {
	d.writes.Add(1)
	return len(p), nil
}

// benchRooms starts rooms instances of games[key] on the wall clock, each
// with 20 players on sockets that take everything at once, and returns the
// runtime with the count of ticks run and of socket writes.
func benchRooms(b *testing.B, games map[string]map[string]string, rooms map[string]int) (*Runtime, *atomic.Int64, *atomic.Int64) {
	root := b.TempDir()
	for key, files := range games {
		for rel, body := range files {
			p := filepath.Join(root, key, rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		b.Fatalf("generating: %v %v", err, res.Problems())
	}
	var ticks, writes atomic.Int64
	rt, err := New(Options{Logger: slog.New(slog.DiscardHandler), GamesRoot: root, HookBudget: 10 * time.Second,
		MaxInstances: 1000, Instances: 1000, RoomsPerMinute: 1 << 20,
		Observe: func(kind string, _ time.Duration) {
			if kind == "tick" {
				ticks.Add(1)
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rt.Shutdown(ctx)
	})
	for key, n := range rooms {
		g := rt.lookup(filepath.Dir(key), filepath.Base(key))
		if g == nil {
			b.Fatalf("%s did not load", key)
		}
		for r := range n {
			for range 20 {
				c := &conn{rt: rt, sock: &wire{raw: discardRaw{&writes}}, wake: make(chan struct{}, 1), gone: make(chan struct{})}
				if rt.seatNew(g, fmt.Sprintf("r%d", r), nil, c) == nil {
					b.Fatalf("seating a player in room %d of %s refused", r, key)
				}
			}
		}
	}
	return rt, &ticks, &writes
}

// cpuNow is the process's CPU time, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRooms runs 50 rooms of bench/load's game (20 players each, on
// sockets that take every write) on the wall clock; an op is one tick
// interval (50 ms). cpu-ns/tick is the process's CPU per room's tick (its
// send rounds and writes included),
// goroutines the runnable and waiting goroutines while they run, ticks/s
// per room what the 50 rooms achieved (the spinning room's own ticks, at
// most 5 a second, are counted in too). "spinning" adds a room of another game
// whose every tick busies its thread for 200 ms: the 50 normal rooms
// should keep their 20 ticks a second.
func BenchmarkRooms(b *testing.B) {
	for _, spinning := range []bool{false, true} {
		b.Run(map[bool]string{false: "normal", true: "spinning"}[spinning], func(b *testing.B) {
			games := map[string]map[string]string{"load.example/load": loadGameFiles(0)}
			rooms := map[string]int{"load.example/load": 50}
			if spinning {
				games["spin.example/spin"] = loadGameFiles(200 * time.Millisecond)
				rooms["spin.example/spin"] = 1
			}
			_, normal, writes := benchRooms(b, games, rooms)
			time.Sleep(time.Second) // every room started and welcomed its players
			t0, w0, c0, start := normal.Load(), writes.Load(), cpuNow(), time.Now()
			b.ResetTimer()
			for range b.N {
				time.Sleep(50 * time.Millisecond)
			}
			b.StopTimer()
			elapsed := time.Since(start).Seconds()
			n := float64(normal.Load() - t0)
			b.ReportMetric(float64(cpuNow()-c0)/n, "cpu-ns/tick")
			b.ReportMetric(n/elapsed/50, "ticks/s/room")
			b.ReportMetric(float64(writes.Load()-w0)/n, "writes/tick")
			b.ReportMetric(float64(goruntime.NumGoroutine()), "goroutines")
		})
	}
}
