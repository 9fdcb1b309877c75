// Command load is hoster's load test: it runs the game runtime in-process on
// a generated game, connects N bots over loopback, lets them play for a
// while, and reports sustained players, tick and send-round times, how
// regularly updates arrived, CPU per 1,000 players and bytes per update.
// Bots and server share the machine, as the goals ask.
//
//	go run ./bench/load -players 2000 -capacity 20 -entities 50 -seconds 20
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

func main() {
	players := flag.Int("players", 2000, "bots to connect")
	capacity := flag.Int("capacity", 20, "players per instance")
	entities := flag.Int("entities", 50, "entities per instance")
	tickRate := flag.Int("tick", 20, "tick rate")
	sendRate := flag.Int("send", 10, "send rate")
	seconds := flag.Int("seconds", 20, "how long to measure, after all bots joined")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured period to this file")
	gogc := flag.Int("gogc", 400, "GC percent, as hoster-server sets it by default (Go's own default is 100)")
	flag.Parse()
	debug.SetGCPercent(*gogc)

	root, err := os.MkdirTemp("", "hoster-load-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	writeGame(root, *tickRate, *sendRate, *capacity, *entities)
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		log.Fatalf("generating the load game: %v %v", err, res.Problems())
	}

	var mu sync.Mutex
	var ticks, sends []time.Duration
	var measuring atomic.Bool
	var skips, stalls, stalled atomic.Int64
	rt, err := runtime.New(runtime.Options{GamesRoot: root, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Observe: func(kind string, d time.Duration) {
		switch kind {
		case "skip":
			if measuring.Load() {
				skips.Add(1)
			}
			return
		case "stall":
			if measuring.Load() {
				stalls.Add(1)
				stalled.Add(int64(d))
			}
			return
		}
		mu.Lock()
		if kind == "tick" {
			ticks = append(ticks, d)
		} else {
			sends = append(sends, d)
		}
		mu.Unlock()
	}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/load"

	var updates, received, gaps, lateGaps atomic.Int64
	var connected atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	sendEvery := time.Second / time.Duration(*sendRate)
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	for i := 0; i < *players; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, _, err := dialer.Dial(url+"?name=bot", map[string][]string{"Host": {"load.example"}})
			if err != nil {
				log.Printf("bot %d: %v", i, err)
				return
			}
			defer ws.Close()
			connected.Add(1)
			go func() { // each bot moves a few times a second
				t := time.NewTicker(300 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
						if ws.WriteMessage(websocket.TextMessage, []byte(`{"c":"move","a":{"dx":1,"dy":-1}}`)) != nil {
							return
						}
					}
				}
			}()
			var last time.Time
			var buf bytes.Buffer // reused: a bot's garbage would be counted with the server's
			for {
				_, r, err := ws.NextReader()
				if err != nil {
					return
				}
				buf.Reset()
				if _, err := buf.ReadFrom(r); err != nil {
					return
				}
				data := buf.Bytes()
				now := time.Now()
				if measuring.Load() && len(data) > 6 && data[6] == 'u' { // {"t":"update"
					updates.Add(1)
					received.Add(int64(len(data)))
					if !last.IsZero() {
						gaps.Add(1)
						if now.Sub(last) > sendEvery*3/2 {
							lateGaps.Add(1) // a send round this viewer missed
						}
					}
					last = now
				}
			}
		}()
		if i%50 == 49 {
			time.Sleep(20 * time.Millisecond) // join in waves, as people do
		}
	}
	for deadline := time.Now().Add(60 * time.Second); connected.Load() < int64(*players) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // let the joins settle
	mu.Lock()
	ticks, sends = ticks[:0], sends[:0]
	mu.Unlock()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer f.Close()
	}
	cpu0, wall0 := cpuTime(), time.Now()
	measuring.Store(true)
	time.Sleep(time.Duration(*seconds) * time.Second)
	measuring.Store(false)
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	cancel()
	rt.Shutdown(context.Background())
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	n := connected.Load()
	instances := (n + int64(*capacity) - 1) / int64(*capacity)
	fmt.Printf("players %d connected of %d, in %d instances of %d, %d entities each, tick %d Hz, send %d Hz, %s measured\n",
		n, *players, instances, *capacity, *entities, *tickRate, *sendRate, wall.Round(time.Second))
	fmt.Printf("tick time      p50 %v  p99 %v  max %v  (%d ticks)\n", pct(ticks, 50), pct(ticks, 99), pct(ticks, 100), len(ticks))
	fmt.Printf("send round     p50 %v  p99 %v  max %v  (%d rounds)\n", pct(sends, 50), pct(sends, 99), pct(sends, 100), len(sends))
	if u := updates.Load(); u > 0 {
		fmt.Printf("updates        %d received, %.0f bytes each on average, %.1f per player per second (send rate %d)\n",
			u, float64(received.Load())/float64(u), float64(u)/float64(n)/wall.Seconds(), *sendRate)
		fmt.Printf("missed sends   %.3f%% of viewer send rounds skipped (%d of %d): the viewer's earlier updates were still waiting for its socket\n",
			100*float64(skips.Load())/float64(skips.Load()+u), skips.Load(), skips.Load()+u)
		fmt.Printf("jitter         %.2f%% of gaps between updates were over 1.5x the send interval\n", 100*float64(lateGaps.Load())/float64(max(gaps.Load(), 1)))
	}
	if n := stalls.Load(); n > 0 {
		fmt.Printf("stalls         %d times an instance fell too far behind and restarted its schedule (%v behind on average)\n",
			n, (time.Duration(stalled.Load()) / time.Duration(n)).Round(time.Millisecond))
	}
	fmt.Printf("CPU            %.2f cores in all (bots included), %.2f cores per 1,000 players\n",
		cpu.Seconds()/wall.Seconds(), cpu.Seconds()/wall.Seconds()/float64(n)*1000)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s) - 1) * p / 100
	return s[i].Round(time.Microsecond)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeGame writes the load game: players move; entities drift, each one
// changing every few ticks, so updates carry real changes.
func writeGame(root string, tick, send, capacity, entities int) {
	dir := filepath.Join(root, "load.example", "load")
	files := map[string]string{
		"hoster-game.json":                fmt.Sprintf(`{"tickRate": %d, "sendRate": %d, "capacity": %d, "origins": ["*"]}`, tick, send, capacity),
		"hoster-player/fields.json":       `{"x": "number", "y": "number"}`,
		"hoster-player/join.js":           `export default function (i, p) { p.x = Math.random() * 100; p.y = Math.random() * 100; }`,
		"hoster-entities/mob/fields.json": `{"x": "number", "y": "number"}`,
		"hoster-entities/mob/tick.js": `export default function (i, e, dt) {
  e.t = (e.t || 0) + 1;
  if (e.t % 5 === 0) { e.x = (e.x + 1) % 100; }
}`,
		"hoster-instance/create.js": fmt.Sprintf(`export default function (i) {
  for (let k = 0; k < %d; k++) i.spawn("mob", { x: Math.round(Math.random() * 100), y: Math.round(Math.random() * 100), t: k });
}`, entities),
		"hoster-commands/move/args.json": `{"dx": {"type": "number", "min": -1, "max": 1}, "dy": {"type": "number", "min": -1, "max": 1}}`,
		"hoster-commands/move/run.js":    `export default function (i, p, a) { p.x += a.dx; p.y += a.dy; }`,
	}
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
