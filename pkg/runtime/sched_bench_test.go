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

// benchRooms starts rooms instances of each game (key domain/name) on clk,
// each with 20 players on sockets that take everything at once, and
// returns a token for each tick run that took less than longest (0: any),
// the count of stalls and of socket writes, once every room
// has started.
func benchRooms(b *testing.B, clk clock, games map[string]map[string]string, rooms map[string]int, longest time.Duration) (ticks chan struct{}, stalls, writes *atomic.Int64) {
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
	ticks, stalls, writes = make(chan struct{}, 1<<16), &atomic.Int64{}, &atomic.Int64{}
	starts := make(chan struct{}, 1<<12) // an instance created and on the schedule
	rt, err := New(Options{Logger: slog.New(slog.DiscardHandler), GamesRoot: root, HookBudget: 10 * time.Second,
		MaxInstances: 1000, Instances: 1000, RoomsPerMinute: 1 << 20, clock: clk,
		Observe: func(kind string, d time.Duration) {
			switch {
			case kind == "tick" && (longest == 0 || d < longest):
				ticks <- struct{}{}
			case kind == "stall":
				stalls.Add(1)
			case kind == "start":
				starts <- struct{}{}
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
	var all []*Instance
	for key, n := range rooms {
		g := rt.lookup(filepath.Dir(key), filepath.Base(key))
		if g == nil {
			b.Fatalf("%s did not load", key)
		}
		for r := range n {
			for range 20 {
				c := &conn{rt: rt, sock: &wire{raw: discardRaw{writes}}, wake: make(chan struct{}, 1), gone: make(chan struct{})}
				if rt.seatNew(g, fmt.Sprintf("r%d", r), nil, c, nil) == nil {
					b.Fatalf("seating a player in room %d of %s refused", r, key)
				}
			}
		}
		all = append(all, g.snapshot()...)
	}
	for range all { // each created, its field tables listed, on the schedule
		waitFor(b, starts, "the instances created")
	}
	return ticks, stalls, writes
}

// cpuNow is the process's CPU time, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRooms runs 50 rooms of bench/load's game (20 players each, on
// sockets that take every write).
//
// "clock": on a clock the benchmark moves, an op is one tick interval (50
// ms of the clock), done when each room has ticked (a send round every
// other op) and the schedule is set for the next. cpu-ns/op is the
// process's CPU for it, goroutines how many there are while the rooms run,
// writes/op the socket writes (one per player per send round: the update
// and its messages together).
//
// "spinning": on the wall clock, beside a room of another game whose every
// tick busies its thread for 200 ms: after 2 s of the 50 normal rooms'
// ticks at their rate (20 a second; a tick is counted as theirs when it
// took under 150 ms), ticks/s/room is their rate over the time the next 3 s
// worth took, stalls how often one of them fell more than 5 ticks behind.
func BenchmarkRooms(b *testing.B) {
	b.Run("clock", func(b *testing.B) {
		clk := newStepClock()
		ticks, _, writes := benchRooms(b, clk, map[string]map[string]string{"load.example/load": loadGameFiles(0)}, map[string]int{"load.example/load": 50}, 0)
		waitFor(b, clk.armed, "the schedule set") // each room waits for its first tick
		for len(clk.armed) > 0 {
			<-clk.armed
		}
		clk.mu.Lock()
		timers := 0 // the schedule's: each is set again once an op
		for _, t := range clk.timers {
			if t.f == nil {
				timers++
			}
		}
		clk.mu.Unlock()
		op := func() {
			clk.Advance(50 * time.Millisecond)
			for range 50 {
				waitFor(b, ticks, "ticks")
			}
			for range timers {
				waitFor(b, clk.armed, "the schedule set again")
			}
		}
		for range 4 { // the joins, the first full updates
			op()
		}
		w0, c0 := writes.Load(), cpuNow()
		b.ResetTimer()
		for range b.N {
			op()
		}
		b.StopTimer()
		b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(writes.Load()-w0)/float64(b.N), "writes/op")
		b.ReportMetric(float64(goruntime.NumGoroutine()), "goroutines")
	})
	b.Run("spinning", func(b *testing.B) {
		ticks, stalls, _ := benchRooms(b, realClock{}, map[string]map[string]string{"load.example/load": loadGameFiles(0), "spin.example/spin": loadGameFiles(200 * time.Millisecond)},
			map[string]int{"load.example/load": 50, "spin.example/spin": 1}, 150*time.Millisecond)
		// Past the joins and the first full updates: 2 s of the normal
		// rooms' ticks.
		for range 50 * 20 * 2 {
			waitFor(b, ticks, "the normal rooms' ticks")
		}
		for range b.N { // run it with -benchtime 1x: each op is about 3 s
			for len(ticks) > 0 {
				<-ticks
			}
			s0, start := stalls.Load(), time.Now()
			const n = 50 * 20 * 3 // 3 s of the normal rooms' ticks at their rate
			for range n {
				waitFor(b, ticks, "the normal rooms' ticks")
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds()/50, "ticks/s/room")
			b.ReportMetric(float64(stalls.Load()-s0), "stalls")
			b.ReportMetric(float64(goruntime.NumGoroutine()), "goroutines")
		}
	})
}

// waitFor takes a token from c.
func waitFor(b *testing.B, c chan struct{}, what string) {
	select {
	case <-c:
	case <-time.After(10 * time.Second): // a hang guard
		b.Fatalf("waiting for %s: none came", what)
	}
}
