// Command load is hoster's load test: bots join a generated game over
// loopback, play for a while, and it reports sustained players, how
// regularly updates arrived, CPU and bytes per update.
//
// By default the runtime runs in this process beside the bots, and the
// runtime's own tick and send-round times are reported, with the CPU of
// server and bots together:
//
//	go run ./bench/load -players 2000 -capacity 20 -entities 50 -seconds 20
//
// With -peer the server runs in its own process, measured from outside
// (CPU from /proc/PID/stat over the window, resident memory): hoster-server
// itself, or the same game as a Colyseus room (bench/colyseus), driven by
// the same bots. bench/vs-colyseus.sh runs both side by side:
//
//	go run ./bench/load -peer hoster -server-bin bin/hoster-server -players 1000
//	go run ./bench/load -peer colyseus -colyseus-dir bench/colyseus -players 1000
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/version"
	"github.com/hoster-dev/hoster/pkg/compact"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

func main() {
	players := flag.Int("players", 2000, "bots to connect")
	capacity := flag.Int("capacity", 20, "players per instance")
	entities := flag.Int("entities", 50, "entities per instance")
	tickRate := flag.Int("tick", 20, "tick rate")
	sendRate := flag.Int("send", 10, "send rate")
	moveRate := flag.Int("moves", 10, "moves each bot sends a second")
	timeEvery := flag.Int("time-every", 10, "one bot in this many (0: none) times its moves, one at a time, from its write to the first update its own player changed in, instead of moving each move interval")
	precision := flag.Float64("precision", 0.0001, "the precision the game declares for x and y (0: none); Colyseus's number type sends a float as float32 when that loses less than 1e-4")
	format := flag.String("format", "compact", `the encoding hoster's bots ask for: "compact" (the subprotocol `+compact.Protocol+`, as the browser library does) or "json"`)
	visible := flag.Bool("visible", false, "give the game a visibility hook: each player sees what is within 25 units of it")
	seconds := flag.Int("seconds", 20, "how long to measure, after all bots joined")
	peer := flag.String("peer", "", `run the server in its own process and measure it from outside: "hoster" (-server-bin) or "colyseus" (-colyseus-dir); "" runs the runtime in this process`)
	serverBin := flag.String("server-bin", "bin/hoster-server", "the hoster-server binary, for -peer hoster")
	colyseusDir := flag.String("colyseus-dir", "bench/colyseus", "the Colyseus room with its installed node_modules, for -peer colyseus")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured period to this file (in-process only)")
	gogc := flag.Int("gogc", 100, "GC percent, as hoster-server sets it by default")
	serverFlags := flag.String("server-flags", "", `more hoster-server serve flags, space-separated, for -peer hoster (e.g. "--isolation none")`)
	probeEvery := flag.Duration("probe-every", 0, "while measuring, one more player joins and leaves this often (0: none), for the join latency of a running server apart from the bots' burst of joins")
	warm := flag.Bool("warm", false, "one player joins and leaves before the bots, so that the first join's cost (a game worker's start) is reported apart from the bots' joins")
	scenario := flag.String("scenario", "", `instead of the load test: "isolation" (a normal game beside hostile ones in worker processes), "alone" (the normal game only, the same way) or "kill" (kill -9 of a game's worker); see isolation.go`)
	serverLog := flag.String("server-log", "", "with -scenario: write the server's log (its workers' included) to this file at the end")
	botsNice := flag.Int("bots-nice", 0, "with -scenario: once the server runs (at this process's priority), lower the bots' to this nice level")
	flag.StringVar(&joinsOut, "joins-out", "", "append each bot's join time (dial to welcome, in ms, one a line) to this file, for percentiles over several runs")
	flag.Parse()
	debug.SetGCPercent(*gogc)

	if *format != "compact" && *format != "json" {
		log.Fatalf("reading -format: %q is not compact or json", *format)
	}
	g := loadGame{tick: *tickRate, send: *sendRate, capacity: *capacity, entities: *entities, visible: *visible, precision: *precision, compact: *format == "compact"}
	switch {
	case *scenario != "":
		runScenario(*scenario, g, *players, *moveRate, *seconds, *serverBin, *botsNice, *serverLog)
		return
	case *writeGameTo != "": // relay.go's flags
		g.write(*writeGameTo)
		return
	case *externalURL != "":
		external(g, *players, *moveRate, *seconds)
		return
	}
	switch *peer {
	case "":
		inProcess(g, *players, *moveRate, *timeEvery, *seconds, *cpuprofile)
	case "hoster", "colyseus":
		outOfProcess(*peer, g, *players, *moveRate, *timeEvery, *seconds, *serverBin, *colyseusDir, strings.Fields(*serverFlags), *warm, *probeEvery)
	default:
		log.Fatalf("reading -peer: %q is not hoster, colyseus or empty", *peer)
	}
}

// joinsOut is -joins-out: where the bots' join times are appended.
var joinsOut string

// appendJoins appends each join time in ms, one a line, to path.
func appendJoins(path string, joins []time.Duration) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, d := range joins {
		fmt.Fprintf(w, "%.3f\n", float64(d)/float64(time.Millisecond))
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// observer gathers the runtime's tick and send-round times, and counts its
// skipped sends and stalls while measuring.
type observer struct {
	mu                     sync.Mutex
	ticks, sends           []time.Duration
	measuring              atomic.Bool
	skips, stalls, stalled atomic.Int64
}

func (o *observer) observe(kind string, d time.Duration) {
	switch kind {
	case "skip":
		if o.measuring.Load() {
			o.skips.Add(1)
		}
		return
	case "stall":
		if o.measuring.Load() {
			o.stalls.Add(1)
			o.stalled.Add(int64(d))
		}
		return
	}
	o.mu.Lock()
	if kind == "tick" {
		o.ticks = append(o.ticks, d)
	} else {
		o.sends = append(o.sends, d)
	}
	o.mu.Unlock()
}

// inProcess runs the runtime in this process, beside the bots: it reports
// the runtime's own tick and send-round times, and the CPU of both.
func inProcess(g loadGame, players, moveRate, timeEvery, seconds int, cpuprofile string) {
	root, err := os.MkdirTemp("", "hoster-load-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	g.write(root)

	o := &observer{}
	// Every bot comes from loopback, one address: no per-address bound,
	// and room for every bot in an instance of its own.
	rt, err := runtime.New(runtime.Options{GamesRoot: root, RoomsPerMinute: -1, SocketsPerAddress: -1, MaxInstances: max(players, 1), Instances: max(players, 1), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Observe: o.observe})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(rt)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	st, wait := runBotsWith(ctx, hosterProtocol{url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/load", host: "load.example", compact: g.compact}, players, moveRate, g.send, botOptions{timeEvery: timeEvery}, nil)
	time.Sleep(2 * time.Second) // let the joins settle
	o.mu.Lock()
	o.ticks, o.sends = o.ticks[:0], o.sends[:0]
	o.mu.Unlock()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer f.Close()
	}
	cpu0, wall0 := cpuTime(), time.Now()
	o.measuring.Store(true)
	st.measuring.Store(true)
	time.Sleep(time.Duration(seconds) * time.Second)
	st.measuring.Store(false)
	o.measuring.Store(false)
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	cpu, wall := cpuTime()-cpu0, time.Since(wall0)
	cancel()
	rt.Shutdown(context.Background())
	wait()

	o.mu.Lock()
	defer o.mu.Unlock()
	ticks, sends := o.ticks, o.sends
	skips, stalls, stalled := &o.skips, &o.stalls, &o.stalled
	n := st.connected.Load()
	fmt.Printf("players %d connected of %d, in %d instances of %d, %d entities each, tick %d Hz, send %d Hz, %d moves a second, %s measured\n",
		n, players, len(st.rooms), g.capacity, g.entities, g.tick, g.send, moveRate, wall.Round(time.Second))
	fmt.Printf("tick time      p50 %v  p99 %v  max %v  (%d ticks)\n", pct(ticks, 50), pct(ticks, 99), pct(ticks, 100), len(ticks))
	fmt.Printf("send round     p50 %v  p99 %v  max %v  (%d rounds)\n", pct(sends, 50), pct(sends, 99), pct(sends, 100), len(sends))
	if u := st.updates.Load(); u > 0 {
		printUpdates(st, n, wall, g.send)
		fmt.Printf("missed sends   %.3f%% of viewer send rounds skipped (%d of %d): the viewer's earlier updates were still waiting for its socket\n",
			100*float64(skips.Load())/float64(skips.Load()+u), skips.Load(), skips.Load()+u)
	}
	timedLine(st, timeEvery)
	if n := stalls.Load(); n > 0 {
		fmt.Printf("stalls         %d times an instance fell too far behind and restarted its schedule (%v behind on average)\n",
			n, (time.Duration(stalled.Load()) / time.Duration(n)).Round(time.Millisecond))
	}
	fmt.Printf("CPU            %.2f cores in all (bots included), %.2f cores per 1,000 players\n",
		cpu.Seconds()/wall.Seconds(), cpu.Seconds()/wall.Seconds()/float64(n)*1000)
}

// outOfProcess runs the server, hoster-server or the Colyseus room, in its
// own process, the bots in this one, and measures the server from outside:
// its CPU and memory from /proc, updates and their bytes at the bots.
func outOfProcess(peer string, g loadGame, players, moveRate, timeEvery, seconds int, serverBin, colyseusDir string, serverFlags []string, warm bool, probeEvery time.Duration) {
	addr := freeAddr()
	srv, proto, cleanup := startPeer(peer, g, players, addr, serverBin, colyseusDir, serverFlags)
	defer cleanup()
	defer srv.stop()

	ctx, cancel := context.WithCancel(context.Background())
	firstJoin := time.Duration(-1)
	if warm {
		firstJoin = joinAndLeave(ctx, proto)
	}
	var st *botStats
	var wait func()
	joinCPU, joinsWall := srv.during(func() {
		st, wait = runBotsWith(ctx, proto, players, moveRate, g.send, botOptions{timeEvery: timeEvery}, nil)
	})
	time.Sleep(2 * time.Second) // let the joins settle
	cpu0, err := srv.cpu()
	if err != nil {
		log.Fatal(err)
	}
	wall0 := time.Now()
	log0 := srv.logLen()
	st.measuring.Store(true)
	probes, handshakes := probeJoins(ctx, proto, probeEvery, time.Duration(seconds)*time.Second)
	st.measuring.Store(false)
	queued := runnable(srv.logSince(log0))
	cpu1, err := srv.cpu()
	if err != nil {
		log.Fatal(err)
	}
	wall := time.Since(wall0)
	rss, peak, pss := srv.memory()
	thrownWhileMeasured := st.thrown.Load()
	cancel()
	wait()
	srv.stop()
	n := st.connected.Load()
	closed := 0
	for _, line := range strings.Split(srv.log.String(), "\n") {
		if strings.Contains(line, "instance closed") {
			closed++
			if closed <= 5 {
				fmt.Println("server log:", line)
			}
		}
	}

	cores := (cpu1 - cpu0).Seconds() / wall.Seconds()
	fmt.Printf("%s: players %d connected of %d, in %d rooms of %d, %d entities each, tick %d Hz, send %d Hz, %d moves a second, visibility hook %v, %s measured\n",
		peer, n, players, len(st.rooms), g.capacity, g.entities, g.tick, g.send, moveRate, g.visible, wall.Round(time.Second))
	if st.updates.Load() > 0 {
		printUpdates(st, n, wall, g.send)
	}
	fmt.Printf("server CPU     %.2f cores (its process and its game workers, bots not included), %.2f per 1,000 players\n", cores, cores/float64(max(n, 1))*1000)
	fmt.Printf("server memory  %d MiB resident at the end (%d MiB proportional: shared pages counted once), %d MiB at the peak\n", rss>>20, pss>>20, peak>>20)
	runq := -1 // the median, -1 when unknown
	if len(queued) > 0 {
		slices.Sort(queued)
		runq = queued[len(queued)/2]
		fmt.Printf("run queues     goroutines waiting to run, in %d half-second samples: median %d, p90 %d, max %d\n",
			len(queued), queued[len(queued)/2], queued[len(queued)*9/10], queued[len(queued)-1])
	}
	joins := printJoins(st, firstJoin, probes, handshakes)
	if joinsOut != "" {
		appendJoins(joinsOut, st.joins)
	}
	fmt.Printf("join CPU       %v of the server's CPU from the bots' first dial until all had joined (%v), ticks included\n", joinCPU.Round(time.Millisecond), joinsWall.Round(time.Millisecond))
	joins += fmt.Sprintf(" join_cpu_ms=%d join_wall_ms=%d", joinCPU.Milliseconds(), joinsWall.Milliseconds())
	timed := timedLine(st, timeEvery)
	fmt.Printf("thrown out     %d players whose connection the server ended; %d got no update while measured; %d instances closed by the server\n", thrownWhileMeasured, st.silent.Load(), closed)
	// One line for bench/vs-colyseus.sh to read.
	format := "json"
	if g.compact {
		format = "compact"
	}
	if peer != "hoster" {
		format = peer
	}
	fmt.Printf("RESULT format=%s peer=%s players=%d connected=%d rooms=%d cpu=%.3f rss_mib=%d pss_mib=%d ups=%.2f bpu=%.0f thrown=%d silent=%d closed=%d runq=%d %s %s flags=%s\n",
		format, peer, players, n, len(st.rooms), cores, rss>>20, pss>>20, float64(st.updates.Load())/float64(max(n, 1))/wall.Seconds(),
		float64(st.received.Load())/float64(max(st.updates.Load(), 1)), thrownWhileMeasured, st.silent.Load(), closed, runq,
		joins, timed, strings.Join(serverFlags, ","))
}

// startPeer starts the server of peer, hoster-server or the Colyseus room,
// listening on addr, and the protocol its bots speak; cleanup removes what
// it made.
func startPeer(peer string, g loadGame, players int, addr, serverBin, colyseusDir string, serverFlags []string) (*server, protocol, func()) {
	var srv *server
	var proto protocol
	var err error
	cleanup := func() {}
	switch peer {
	case "hoster":
		root, err := os.MkdirTemp("", "hoster-load-")
		if err != nil {
			log.Fatal(err)
		}
		cleanup = func() { os.RemoveAll(root) }
		g.write(filepath.Join(root, "hosting", "hoster-games"))
		bound := fmt.Sprint(players + 100) // the warm and probe joins too
		bin, err := filepath.Abs(serverBin)
		if err != nil {
			log.Fatal(err)
		}
		srv, err = startServer(append([]string{bin, "serve", "--hosting-root", filepath.Join(root, "hosting"), "--logs-root", filepath.Join(root, "logs"),
			"--listen", addr, "--ask-listen", freeAddr(),
			// Every bot comes from loopback, one address: bounds no bot reaches.
			"--max-instances", bound, "--default-instances", bound, "--rooms-per-minute", bound, "--sockets-per-address", bound},
			serverFlags...), []string{"GODEBUG=schedtrace=500"}, root, addr)
		if err != nil {
			cleanup() // log.Fatal runs no deferred call
			log.Fatal(err)
		}
		proto = hosterProtocol{url: "ws://" + addr + "/load", host: "load.example", compact: g.compact}
	case "colyseus":
		_, port, _ := net.SplitHostPort(addr)
		visible := "0"
		if g.visible {
			visible = "1"
		}
		srv, err = startServer([]string{filepath.Join("node_modules", ".bin", "node"), "server.js", port},
			[]string{fmt.Sprint("CAPACITY=", g.capacity), fmt.Sprint("ENTITIES=", g.entities), fmt.Sprint("TICK=", g.tick), fmt.Sprint("SEND=", g.send), "VISIBLE=" + visible},
			colyseusDir, addr)
		if err != nil {
			log.Fatal(err)
		}
		proto = colyseusProtocol{addr: addr, room: "load", http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}}
	}
	return srv, proto, cleanup
}

// joinAndLeave is one player's join, and how long it took.
func joinAndLeave(ctx context.Context, p protocol) time.Duration {
	start := time.Now()
	ws, _, err := p.join(ctx, "")
	if err != nil {
		log.Fatalf("the first join: %v", err)
	}
	defer ws.Close()
	return time.Since(start)
}

// printJoins prints the joins' times: the bots', the first one's (before
// the bots, -warm; negative: none) and the probes' with their handshakes;
// it returns them as RESULT fields.
func printJoins(st *botStats, firstJoin time.Duration, probes, handshakes []time.Duration) string {
	fmt.Printf("joins          %d, from the dial to the welcome: p50 %v, p99 %v, max %v (their handshakes: p50 %v, p99 %v)",
		len(st.joins), pct(st.joins, 50), pct(st.joins, 99), pct(st.joins, 100), pct(st.joinHS, 50), pct(st.joinHS, 99))
	first := "none"
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if firstJoin >= 0 {
		fmt.Printf("; the first join, before the bots': %v", firstJoin.Round(time.Microsecond))
		first = fmt.Sprintf("%.2f", ms(firstJoin))
	}
	fmt.Println()
	if len(probes) > 0 {
		fmt.Printf("probe joins    %d while measuring, from the dial to the welcome: p50 %v, p99 %v, max %v; their handshakes (to the upgrade): p50 %v, p99 %v\n",
			len(probes), pct(probes, 50), pct(probes, 99), pct(probes, 100), pct(handshakes, 50), pct(handshakes, 99))
	}
	return fmt.Sprintf("join_p50_ms=%.2f join_p99_ms=%.2f join_max_ms=%.2f join_hs_p50_ms=%.2f join_hs_p99_ms=%.2f first_join_ms=%s probes=%d probe_p50_ms=%.2f probe_p99_ms=%.2f probe_max_ms=%.2f probe_hs_p50_ms=%.2f probe_hs_p99_ms=%.2f",
		ms(pct(st.joins, 50)), ms(pct(st.joins, 99)), ms(pct(st.joins, 100)), ms(pct(st.joinHS, 50)), ms(pct(st.joinHS, 99)), first,
		len(probes), ms(pct(probes, 50)), ms(pct(probes, 99)), ms(pct(probes, 100)), ms(pct(handshakes, 50)), ms(pct(handshakes, 99)))
}

// probeJoins sleeps for window; with every > 0, one player joins and leaves
// each every meanwhile, at a random moment of each period (probeAt), and
// their joins' durations (from the dial to the welcome) are returned, with
// their handshakes' (from the dial to the upgrade).
func probeJoins(ctx context.Context, p protocol, every, window time.Duration) (out, handshakes []time.Duration) {
	end := time.Now().Add(window)
	if every <= 0 {
		time.Sleep(window)
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	for next := time.Now(); next.Before(end); next = next.Add(every) {
		time.Sleep(time.Until(probeAt(next, every, rng)))
		start := time.Now()
		ws, j, err := p.join(ctx, "")
		if err != nil {
			log.Printf("a probe join: %v", err)
			continue
		}
		out, handshakes = append(out, time.Since(start)), append(handshakes, j.handshake)
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		ws.Close()
	}
	time.Sleep(time.Until(end))
	return out, handshakes
}

// probeAt is when the probe join of the period starting at next dials: a
// random moment of it. A join is welcomed at its instance's next tick, and
// the probes all join one instance (the bots filled the others); probes a
// whole number of ticks apart would all dial at one phase of its ticks, so
// that each run's join times were that phase (set by the first probe's
// instance start: 2 ms in one run, 40 ms in the next) plus, for a probe a
// little slower than the first, a whole tick more. A player arriving at a
// running server comes at any moment of a tick.
func probeAt(next time.Time, every time.Duration, rng *rand.Rand) time.Time {
	return next.Add(time.Duration(rng.Int64N(int64(every))))
}

func printUpdates(st *botStats, n int64, wall time.Duration, sendRate int) {
	u := st.updates.Load()
	fmt.Printf("updates        %d received, %.0f bytes each on the wire on average, %.2f per player per second (send rate %d)\n",
		u, float64(st.received.Load())/float64(u), float64(u)/float64(n)/wall.Seconds(), sendRate)
	fmt.Printf("jitter         %.2f%% of gaps between updates were over 1.5x the send interval\n", 100*float64(st.lateGaps.Load())/float64(max(st.gaps.Load(), 1)))
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

// loadGame is the load game: players move; entities drift, each one
// changing every few ticks, so updates carry real changes. bench/colyseus
// holds the same game as a Colyseus room.
type loadGame struct {
	tick, send, capacity, entities int
	visible                        bool
	precision                      float64
	compact                        bool // hoster's bots ask for the compact protocol
}

// write writes the game under gamesRoot and generates it.
func (g loadGame) write(gamesRoot string) {
	writeGame(gamesRoot, "load.example/load", g.files())
	generate(gamesRoot)
}

// files are the game's files, by their path in the game's folder.
func (g loadGame) files() map[string]string {
	number := `"number"`
	if g.precision > 0 {
		number = fmt.Sprintf(`{"type": "number", "precision": %g}`, g.precision)
	}
	fields := fmt.Sprintf(`{"x": %s, "y": %s}`, number, number)
	files := map[string]string{
		"hoster-game.json":                fmt.Sprintf(`{"tickRate": %d, "sendRate": %d, "capacity": %d, "origins": ["*"]}`, g.tick, g.send, g.capacity),
		"hoster-player/fields.json":       fields,
		"hoster-player/join.js":           `export default function (i, p) { p.x = Math.random() * 100; p.y = Math.random() * 100; }`,
		"hoster-entities/mob/fields.json": fields,
		"hoster-entities/mob/tick.js": `export default function (i, e, dt) {
  e.t = (e.t || 0) + 1;
  if (e.t % 5 === 0) { e.x = (e.x + 1) % 100; }
}`,
		"hoster-instance/create.js": fmt.Sprintf(`export default function (i) {
  for (let k = 0; k < %d; k++) i.spawn("mob", { x: Math.round(Math.random() * 100), y: Math.round(Math.random() * 100), t: k });
}`, g.entities),
		"hoster-commands/move/args.json": `{"dx": {"type": "number", "min": -1, "max": 1}, "dy": {"type": "number", "min": -1, "max": 1}}`,
		"hoster-commands/move/run.js":    `export default function (i, p, a) { p.x += a.dx; p.y += a.dy; }`,
	}
	if g.visible {
		files["hoster-player/visible.js"] = `export default function (i, p, t) { return Math.abs(t.x - p.x) < 25 && Math.abs(t.y - p.y) < 25; }`
	}
	return files
}

// writeGame writes a game's files under gamesRoot/<domain>/<game>.
func writeGame(gamesRoot, key string, files map[string]string) {
	for rel, body := range files {
		p := filepath.Join(gamesRoot, filepath.FromSlash(key), rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// generate generates every game under gamesRoot.
func generate(gamesRoot string) {
	if res, err := gen.GenerateWith(gamesRoot, gen.Options{Release: version.Release()}); err != nil || res.Failed() {
		log.Fatalf("generating the games: %v %v", err, res.Problems())
	}
}
