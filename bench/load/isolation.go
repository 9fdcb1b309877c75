package main

// The scenarios of bench/isolation.sh: hoster-server serve --isolation
// process, each game in a worker process of its own, measured from outside.
//
// isolation: the load game (the normal one, -players bots) beside two
// hostile games: grow.example/grow, whose tick keeps 1 MB more of numbers
// each tick (a budget of growBudget), and spin.example/spin, whose every
// instance spins a core from a timer (two rooms per core). Over -seconds:
// the normal game's updates per player each second and its players thrown
// out; each grow worker's end after it crossed its budget (its resident
// memory sampled from /proc every sampleEvery, against the time of the
// parent's log lines); the close codes the grow players got; each worker's
// CPU; and the server's peak resident memory (parent and workers) against
// the sum of the budgets plus the parent's own.
//
// kill: the load game with -players bots that rejoin as the browser library
// does, and a second game (other.example/load) with otherPlayers bots that
// do not; killAfter into the window, kill -9 of the load game's worker: the
// close code its players got, the time from the kill to each one's welcome
// in a fresh instance, and whether the other game noticed.

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	defaultBudget = 512 // MiB: serve's --memory, the budget of a game that sets none
	growBudget    = 256 // MiB: the grow game's "memory"
	growPlayers   = 4
	otherPlayers  = 20
	killAfter     = 5 * time.Second
	sampleEvery   = 10 * time.Millisecond
)

// hostileGames are the isolation scenario's hostile games, built on the
// load game's files (its players, moves and rates).
func hostileGames(g loadGame) map[string]map[string]string {
	grow := g.files()
	grow["hoster-game.json"] = fmt.Sprintf(`{"tickRate": %d, "sendRate": %d, "capacity": 16, "origins": ["*"], "memory": %d}`, g.tick, g.send, growBudget)
	grow["hoster-instance/tick.js"] = `export default function (i) {
  if (!i.state.keep) i.state.keep = [];
  i.state.keep.push(new Array(1 << 17).fill(Math.random()));
}`
	spin := g.files()
	spin["hoster-instance/create.js"] = `export default function (i) {
  i.every(0.05, () => { const t = Date.now(); while (Date.now() - t < 45) {} });
}`
	return map[string]map[string]string{"grow.example/grow": grow, "spin.example/spin": spin}
}

func runScenario(name string, g loadGame, players, moveRate, seconds int, serverBin string, botsNice int, serverLog string) {
	games := map[string]map[string]string{"load.example/load": g.files()}
	switch name {
	case "alone":
	case "isolation":
		for k, v := range hostileGames(g) {
			games[k] = v
		}
	case "kill":
		games["other.example/load"] = g.files()
	default:
		log.Fatalf("reading -scenario: %q is not isolation, alone or kill", name)
	}
	srv, addr, stop := startIsolated(serverBin, games, players+100)
	defer stop()
	if serverLog != "" {
		defer func() {
			if err := os.WriteFile(serverLog, []byte(srv.log.String()), 0o644); err != nil {
				log.Printf("writing the server's log: %v", err)
			}
		}()
	}
	if botsNice != 0 {
		if err := niceSelf(botsNice); err != nil {
			log.Fatal(err)
		}
	}
	smp := &sampler{srv: srv, workers: map[int]*workerSample{}}
	go smp.run()
	defer smp.stop()
	if name != "kill" {
		isolation(smp, addr, g, players, moveRate, seconds, name == "isolation")
	} else {
		killed(smp, addr, g, players, moveRate, seconds)
	}
}

// startIsolated writes and generates the games and runs hoster-server
// with --isolation process on them, bounds no bot reaches, until the games
// are loaded.
func startIsolated(serverBin string, games map[string]map[string]string, bound int) (*server, string, func()) {
	root, err := os.MkdirTemp("", "hoster-isolation-")
	if err != nil {
		log.Fatal(err)
	}
	gamesRoot := filepath.Join(root, "hosting", "hoster-games")
	for key, files := range games {
		writeGame(gamesRoot, key, files)
	}
	generate(gamesRoot)
	bin, err := filepath.Abs(serverBin)
	if err != nil {
		log.Fatal(err)
	}
	addr, b := freeAddr(), fmt.Sprint(bound)
	srv, err := startServer([]string{bin, "serve", "--isolation", "process", "--memory", fmt.Sprint(defaultBudget),
		"--hosting-root", filepath.Join(root, "hosting"), "--logs-root", filepath.Join(root, "logs"),
		"--listen", addr, "--ask-listen", freeAddr(),
		"--max-instances", b, "--default-instances", b, "--rooms-per-minute", b, "--sockets-per-address", b}, nil, root, addr)
	if err != nil {
		log.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(srv.log.String(), `msg="games loaded"`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			log.Fatalf("the games did not load:\n%s", srv.log.String())
		}
	}
	return srv, addr, func() { srv.stop(); os.RemoveAll(root) }
}

// niceSelf lowers every thread of this process to nice (threads made later
// inherit it), as pkg/worker does its workers'.
func niceSelf(nice int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("lowering the bots' priority: %w", err)
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
				return fmt.Errorf("lowering the bots' priority, thread %d: %w", tid, err)
			}
		}
	}
	return nil
}

// isolation runs the isolation scenario (with the hostile games, or the
// normal game alone) and prints its RESULT and END lines.
func isolation(smp *sampler, addr string, g loadGame, players, moveRate, seconds int, hostile bool) {
	ctx, cancel := context.WithCancel(context.Background())
	var waits []func()
	defer func() { cancel(); waitAll(waits) }()
	bySecond := make([]atomic.Int64, seconds)
	normal, w1 := runBotsWith(ctx, hosterProtocol{url: "ws://" + addr + "/load", host: "load.example", compact: g.compact}, players, moveRate, g.send, botOptions{}, bySecond)
	waits = append(waits, w1)
	codes := &tally{m: map[int]int{}}
	grow := &botStats{}
	if hostile {
		var w2 func()
		grow, w2 = runBotsWith(ctx, hosterProtocol{url: "ws://" + addr + "/grow", host: "grow.example", compact: g.compact}, growPlayers, moveRate, g.send,
			botOptions{rejoin: true, closed: func(_, code int, _ string) { codes.add(code) }}, nil)
		waits = append(waits, w2)
		for k := range 2 * runtime.NumCPU() {
			_, w := runBotsWith(ctx, hosterProtocol{url: "ws://" + addr + "/spin", host: "spin.example", compact: g.compact, query: fmt.Sprintf("room=s%d", k)},
				1, moveRate, g.send, botOptions{rejoin: true}, nil)
			waits = append(waits, w)
		}
	}
	time.Sleep(2 * time.Second) // let the joins settle
	cpu0, wall0 := smp.cpu(), time.Now()
	normal.startMeasuring()
	time.Sleep(time.Duration(seconds) * time.Second)
	normal.measuring.Store(false)
	cpu1, wall := smp.cpu(), time.Since(wall0)
	thrown := normal.thrown.Load()
	load := loadAvg()
	smp.stop()
	log0 := smp.srv.log.String()
	ends := smp.ends(log0)
	n := normal.connected.Load()
	worst, at := worstSecond(bySecond, n)
	cores := smp.cores(cpu0, cpu1, wall)
	budgets, parentPeak, peak := smp.peaks()
	scenario := "alone"
	if hostile {
		scenario = "isolation"
	}
	fmt.Printf("RESULT scenario=%s players=%d connected=%d seconds=%d ups=%.2f ups_worst=%.2f worst_at=%d thrown=%d silent=%d grow_players=%d grow_connected=%d spin_rooms=%d parent_cores=%.2f normal_cores=%.2f spin_cores=%.2f grow_cores=%.2f ended_cores=%.2f grow_ends=%d codes=%s peak_rss_mib=%d parent_peak_mib=%d budgets_mib=%d load=%s\n",
		scenario, players, n, seconds, float64(normal.updates.Load())/float64(max(n, 1))/wall.Seconds(), worst, at, thrown, normal.silent.Load(),
		growPlayers, grow.connected.Load(), 2*runtime.NumCPU(), cores["parent"], cores["load.example/load"], cores["spin.example/spin"], cores["grow.example/grow"], cores["ended"],
		len(ends), codes, peak>>20, parentPeak>>20, budgets>>20, load)
	for _, e := range ends {
		fmt.Printf("%s at_s=%.1f\n", e, e.ended.Sub(wall0).Seconds())
	}
	fmt.Println("SERIES", series(bySecond, n))
}

// series is each second's updates per player, "10.0,9.9,...".
func series(bySecond []atomic.Int64, players int64) string {
	var out []string
	for s := range bySecond {
		out = append(out, fmt.Sprintf("%.1f", float64(bySecond[s].Load())/float64(max(players, 1))))
	}
	return strings.Join(out, ",")
}

// waitAll waits for every group of bots to stop.
func waitAll(waits []func()) {
	for _, w := range waits {
		w()
	}
}

// killed runs the kill scenario and prints its RESULT line.
func killed(smp *sampler, addr string, g loadGame, players, moveRate, seconds int) {
	ctx, cancel := context.WithCancel(context.Background())
	var waits []func()
	defer func() { cancel(); waitAll(waits) }()
	var mu sync.Mutex
	var killAt time.Time
	codes := &tally{m: map[int]int{}}
	back := map[int]time.Duration{} // bot -> from the kill to its welcome
	var took []time.Duration        // those rejoins' own joins, from the dial
	rooms := map[string]bool{}
	o := botOptions{rejoin: true,
		closed: func(_, code int, _ string) { codes.add(code) },
		welcomed: func(bot int, room string, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := back[bot]; !ok && !killAt.IsZero() {
				back[bot], rooms[room] = time.Since(killAt), true
				took = append(took, d)
			}
		}}
	bySecond, otherBySecond := make([]atomic.Int64, seconds), make([]atomic.Int64, seconds)
	normal, w1 := runBotsWith(ctx, hosterProtocol{url: "ws://" + addr + "/load", host: "load.example", compact: g.compact}, players, moveRate, g.send, o, bySecond)
	other, w2 := runBotsWith(ctx, hosterProtocol{url: "ws://" + addr + "/load", host: "other.example", compact: g.compact}, otherPlayers, moveRate, g.send, botOptions{}, otherBySecond)
	waits = append(waits, w1, w2)
	time.Sleep(2 * time.Second) // let the joins settle
	normal.startMeasuring()
	other.startMeasuring()
	time.Sleep(killAfter)
	pid := smp.workerOf("load.example/load")
	if pid == 0 {
		log.Fatalf("the load game has no worker:\n%s", smp.srv.log.String())
	}
	mu.Lock()
	killAt = time.Now()
	mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		log.Fatalf("killing the load game's worker %d: %v", pid, err)
	}
	time.Sleep(time.Duration(seconds)*time.Second - killAfter)
	otherThrown, load := other.thrown.Load(), loadAvg()
	smp.stop()
	mu.Lock()
	defer mu.Unlock()
	var d []time.Duration
	for _, v := range back {
		d = append(d, v)
	}
	ow, oat := worstSecond(otherBySecond, other.connected.Load())
	nw, nat := worstSecond(bySecond, normal.connected.Load())
	noticed := "none"
	if e := smp.ends(smp.srv.log.String()); len(e) > 0 {
		noticed = fmt.Sprintf("%.1f", float64(e[0].ended.Sub(killAt))/float64(time.Millisecond))
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	fmt.Println("SERIES", series(bySecond, normal.connected.Load()), "other", series(otherBySecond, other.connected.Load()))
	fmt.Printf("RESULT scenario=kill players=%d connected=%d seconds=%d codes=%s rejoined=%d rooms_after=%d rejoin_p50_ms=%.0f rejoin_p99_ms=%.0f rejoin_max_ms=%.0f rejoin_join_p50_ms=%.0f rejoin_join_p99_ms=%.0f parent_noticed_ms=%s normal_worst=%.2f normal_worst_at=%d other_players=%d other_connected=%d other_thrown=%d other_ups=%.2f other_worst=%.2f other_worst_at=%d load=%s\n",
		players, normal.connected.Load(), seconds, codes, len(d), len(rooms), ms(pct(d, 50)), ms(pct(d, 99)), ms(pct(d, 100)), ms(pct(took, 50)), ms(pct(took, 99)), noticed, nw, nat,
		otherPlayers, other.connected.Load(), otherThrown, float64(other.updates.Load())/float64(max(other.connected.Load(), 1))/float64(seconds), ow, oat, load)
}

// worstSecond is the fewest updates per player in a whole second of the
// window, and which second it was.
func worstSecond(bySecond []atomic.Int64, players int64) (float64, int) {
	worst, at := -1.0, -1
	for s := range bySecond {
		v := float64(bySecond[s].Load()) / float64(max(players, 1))
		if worst < 0 || v < worst {
			worst, at = v, s
		}
	}
	return worst, at
}

// tally counts close codes.
type tally struct {
	mu sync.Mutex
	m  map[int]int
}

func (t *tally) add(code int) { t.mu.Lock(); t.m[code]++; t.mu.Unlock() }

// String is "4003:20,1006:3", the most frequent first; "none" when empty.
func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []int
	for k := range t.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return t.m[keys[i]] > t.m[keys[j]] || t.m[keys[i]] == t.m[keys[j]] && keys[i] < keys[j]
	})
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d:%d", k, t.m[k]))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}

// loadAvg is the machine's load average, "1m,5m,15m".
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ",")
}

// A sampler reads the server's processes from /proc every sampleEvery: the
// parent's and each worker's resident memory, their peaks, and when a
// worker first went over its budget and when it was gone.
type sampler struct {
	srv  *server
	done atomic.Bool

	mu         sync.Mutex
	workers    map[int]*workerSample // by process id
	peakTotal  int64
	peakParent int64
}

type workerSample struct {
	pid       int
	game      string
	budget    int64 // bytes, from its --memory
	peak      int64
	over      time.Time // the first sample over its budget
	overRSS   int64
	samples   int // samples since, and how many of them over its budget
	overs     int
	atLimit   time.Time // the first sample its memory cgroup's charge was at its budget
	gone      time.Time // the first sample it was no longer there
	overLine  time.Time // the parent's log: over its budget
	ended     time.Time // the parent's log: the worker ended (its players closed)
	endedCode string
}

func (s *sampler) stop() { s.done.Store(true) }

func (s *sampler) run() {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for n := 0; !s.done.Load(); n++ {
		if n%25 == 0 {
			s.scan()
		}
		now := time.Now()
		total, _ := memoryOf(s.srv.cmd.Process.Pid)
		s.mu.Lock()
		s.peakParent = max(s.peakParent, total)
		for _, w := range s.workers {
			if !w.gone.IsZero() {
				continue
			}
			rss, _ := memoryOf(w.pid)
			if rss == 0 { // ended (a zombie has no VmRSS)
				w.gone = now
				continue
			}
			total += rss
			w.peak = max(w.peak, rss)
			if rss > w.budget && w.over.IsZero() {
				w.over, w.overRSS = now, rss
			}
			if w.atLimit.IsZero() && chargedOf(w.pid) >= w.budget*99/100 {
				w.atLimit = now
			}
			if !w.over.IsZero() {
				w.samples++
				if rss > w.budget {
					w.overs++
				}
			}
		}
		s.peakTotal = max(s.peakTotal, total)
		s.mu.Unlock()
		<-t.C
	}
}

// scan finds the server's workers started since the last scan: its
// children running "worker --game KEY --memory BYTES".
func (s *sampler) scan() {
	for _, pid := range children(s.srv.cmd.Process.Pid) {
		s.mu.Lock()
		_, known := s.workers[pid]
		s.mu.Unlock()
		if known {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		w := &workerSample{pid: pid}
		args := strings.Split(string(b), "\x00")
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--game":
				w.game = args[i+1]
			case "--memory":
				w.budget, _ = strconv.ParseInt(args[i+1], 10, 64)
			}
		}
		if w.game == "" {
			continue
		}
		s.mu.Lock()
		s.workers[pid] = w
		s.mu.Unlock()
	}
}

// workerOf is the running worker of a game, 0 when none.
func (s *sampler) workerOf(game string) int {
	s.scan()
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid, w := range s.workers {
		if w.game == game && w.gone.IsZero() {
			return pid
		}
	}
	return 0
}

// cpu is the CPU time of the server's processes now: by worker process id,
// and under 0 the parent's own and under -1 that of the workers that ended
// (the parent's children's, counted whole once it waited for them).
func (s *sampler) cpu() map[int]time.Duration {
	s.scan()
	out := map[int]time.Duration{}
	if f, err := procStat(s.srv.cmd.Process.Pid); err == nil {
		out[0], out[-1] = ticks(f, 14, 15), ticks(f, 16, 17)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid, w := range s.workers {
		if f, err := procStat(pid); err == nil && w.gone.IsZero() {
			out[pid] = ticks(f, 14, 15)
		}
	}
	return out
}

// cores is the CPU between two readings of cpu, in cores over wall, by
// game ("parent" the parent's own, "ended" the workers that ended, whole):
// a worker's CPU counts while it runs at the second reading.
func (s *sampler) cores(cpu0, cpu1 map[int]time.Duration, wall time.Duration) map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]float64{}
	for pid, d := range cpu1 {
		key := map[int]string{0: "parent", -1: "ended"}[pid]
		if w := s.workers[pid]; w != nil {
			key = w.game
		}
		out[key] += (d - cpu0[pid]).Seconds() / wall.Seconds()
	}
	return out
}

// peaks are the sum of the budgets of the games that had a worker, the
// parent's peak resident memory and the whole server's (sampled).
func (s *sampler) peaks() (budgets, parent, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, w := range s.workers {
		if !seen[w.game] {
			seen[w.game] = true
			budgets += w.budget
		}
	}
	return budgets, s.peakParent, s.peakTotal
}

// The parent's log lines on a worker's end (slog's text format).
var (
	lineOver  = regexp.MustCompile(`(?m)^time=(\S+) .*msg="game worker over its memory budget[^"]*".* worker=(\d+)`)
	lineEnded = regexp.MustCompile(`(?m)^time=(\S+) .*msg="game worker ended: [^"]*".* worker=(\d+).* code=(\d+)`)
)

// ends are the workers that ended not asked to (a crash, a kill, over
// budget), from the samples and the parent's log, in the order they ended.
func (s *sampler) ends(logText string) []*workerSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := func(m []string) (*workerSample, time.Time) {
		pid, _ := strconv.Atoi(m[2])
		t, _ := time.Parse(time.RFC3339Nano, m[1])
		return s.workers[pid], t
	}
	for _, m := range lineOver.FindAllStringSubmatch(logText, -1) {
		if w, t := at(m); w != nil {
			w.overLine = t
		}
	}
	var out []*workerSample
	for _, m := range lineEnded.FindAllStringSubmatch(logText, -1) {
		if w, t := at(m); w != nil {
			w.ended, w.endedCode = t, m[3]
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b *workerSample) int { return a.ended.Compare(b.ended) })
	return out
}

// String is a worker's END line for bench/isolation.sh: the times from its
// first sample over budget to the parent's log lines and to its absence.
func (w *workerSample) String() string {
	since := func(t time.Time) string {
		if t.IsZero() || w.over.IsZero() {
			return "none"
		}
		return fmt.Sprintf("%.0f", float64(t.Sub(w.over))/float64(time.Millisecond))
	}
	limitGone := "none"
	if !w.atLimit.IsZero() && !w.gone.IsZero() {
		limitGone = fmt.Sprintf("%.0f", float64(w.gone.Sub(w.atLimit))/float64(time.Millisecond))
	}
	return fmt.Sprintf("END game=%s pid=%d budget_mib=%d rss_at_cross_mib=%d peak_mib=%d over_log_ms=%s ended_log_ms=%s gone_ms=%s code=%s overs=%d/%d limit_to_gone_ms=%s",
		w.game, w.pid, w.budget>>20, w.overRSS>>20, w.peak>>20, since(w.overLine), since(w.ended), since(w.gone), w.endedCode, w.overs, w.samples, limitGone)
}

// chargedOf is the memory the kernel charges to pid's memory cgroup (v1's
// memory.usage_in_bytes, v2's memory.current), 0 when it has none of its
// own: what a cgroup-held budget is measured against, where /proc's RSS
// also counts file pages charged to other groups.
func chargedOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], "hoster-") {
			continue
		}
		file := ""
		switch {
		case parts[1] == "memory":
			file = filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.usage_in_bytes")
		case parts[0] == "0" && parts[1] == "":
			file = filepath.Join("/sys/fs/cgroup", parts[2], "memory.current")
		default:
			continue
		}
		v, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		return n
	}
	return 0
}
