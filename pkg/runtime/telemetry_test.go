package runtime

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/waitfs"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// fakeClock is the telemetry's clock, moved by the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func (c *fakeClock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// received tallies what a client got, to compare with the server's counts.
type received struct {
	mu                      sync.Mutex
	updates, bytes          int64
	appeared, changed, gone int64
}

// tallyBoth tallies the raw frames a and b get from now on, including what
// came before (the joins' appears are already in the channels); each done
// closes when its client's messages end.
func tallyBoth(a, b *client) (ra, rb *received, doneA, doneB chan struct{}) {
	ra, rb = &received{}, &received{}
	doneA, doneB = make(chan struct{}), make(chan struct{})
	go func() { a.tally(ra); close(doneA) }()
	go func() { b.tally(rb); close(doneB) }()
	return ra, rb, doneA, doneB
}

func (c *client) tally(r *received) {
	for m := range c.msgs {
		if m["t"] != "update" {
			continue
		}
		r.mu.Lock()
		r.updates++
		r.bytes += int64(m["_bytes"].(int))
		if l, ok := m["appear"].([]any); ok {
			r.appeared += int64(len(l))
		}
		if l, ok := m["change"].([]any); ok {
			r.changed += int64(len(l))
		}
		if l, ok := m["gone"].([]any); ok {
			r.gone += int64(len(l))
		}
		r.mu.Unlock()
	}
}

// withReceived fills want's update counts with what the clients a and b
// received between them.
func withReceived(want api.GameStatsLine, ra, rb *received) api.GameStatsLine {
	ra.mu.Lock()
	rb.mu.Lock()
	defer ra.mu.Unlock()
	defer rb.mu.Unlock()
	want.UpdBytes = api.SumCount{Sum: float64(ra.bytes + rb.bytes), Count: ra.updates + rb.updates}
	want.Delta = api.DeltaCounts{Appeared: ra.appeared + rb.appeared, Changed: ra.changed + rb.changed, Gone: ra.gone + rb.gone}
	return want
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// waitFile waits until path has at least lines lines, woken by the file
// system.
func waitFile(t *testing.T, path string, lines int) []string {
	t.Helper()
	var l []string
	err := waitfs.Until(filepath.Dir(path), func() bool {
		if _, err := os.Stat(path); err == nil {
			l = readLines(t, path)
		}
		return len(l) >= lines
	}, 10*time.Second) // a hang guard
	if err != nil {
		t.Fatalf("%s never had %d lines: %v", path, lines, err)
	}
	return l
}

// A scripted session gives exactly known counters.
func TestStatsLineCountsExactly(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)}
	logs := t.TempDir()
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4)}, func(o *Options) {
		o.LogsRoot, o.GamelogInterval, o.Now = logs, time.Minute, clock.Now
		o.ResumeGrace = 300 * time.Millisecond
	})
	a := e.join(t, "a.example", "lab", "a")
	b := e.join(t, "a.example", "lab", "b")
	ra, rb, _, doneB := tallyBoth(a, b)

	frame := `{"c":"move","a":{"dx":0.25}}`
	for i := 0; i < 3; i++ {
		a.ws.WriteMessage(websocket.TextMessage, []byte(frame))
	}
	a.ws.WriteMessage(websocket.TextMessage, []byte(`{"c":"move","a":{"dx":9}}`)) // refused: not counted
	moved := func(m map[string]map[string]any) bool { return m[a.me]["x"] == 0.75 && m[b.me] != nil }
	a.until("its three moves, and b", moved)
	b.until("a's three moves, and itself", moved)
	clock.Add(30 * time.Second) // b has played 30 s
	// b leaves cleanly; its seat is released after the resume grace.
	b.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""))
	<-doneB
	a.until("b gone once the grace passed", func(m map[string]map[string]any) bool { _, ok := m[b.me]; return !ok })
	clock.Add(31 * time.Second) // the interval ends
	path := filepath.Join(logs, "hoster-logs", "a.example", "lab", "hoster-processes", e.rt.Process(), "stats-2026-11-22-10.jsonl")
	lines := waitFile(t, path, 1)
	var got api.GameStatsLine
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	want := withReceived(api.GameStatsLine{
		T: clock.Now().Unix(), Process: e.rt.Process(), Instance: a.inst,
		Players: 1, Entities: 1, Arrivals: 2, Departures: 1,
		Playtime: api.SumCount{Sum: 30, Count: 1},
		Commands: map[string]int64{"move": 3},
		CmdBytes: api.SumCount{Sum: float64(3 * len(frame)), Count: 3},
	}, ra, rb)
	wb, _ := json.Marshal(want)
	if lines[0] != string(wb) {
		t.Fatalf("stats line\n%s\nwant\n%s", lines[0], wb)
	}
	if want.Delta.Gone != 1 {
		t.Fatalf("a saw %d gone, want b's departure", want.Delta.Gone)
	}
}

// On the hour, each live instance writes its serialised state; the hour's
// files are new files.
func TestHourRolloverAndSnapshot(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 59, 50, 0, time.UTC)}
	logs := t.TempDir()
	files := lab(4)
	files["hoster-instance/serialise.js"] = `export default function (i) { return { players: Object.keys(i.players).length, note: "from serialise" }; }`
	e := startWith(t, map[string]map[string]string{"a.example/lab": files}, func(o *Options) {
		o.LogsRoot, o.GamelogInterval, o.Now = logs, time.Minute, clock.Now
	})
	a := e.join(t, "a.example", "lab", "a") // the instance read the hour before it welcomed a
	clock.Set(time.Date(2026, 11, 22, 11, 0, 5, 0, time.UTC))
	dir := filepath.Join(logs, "hoster-logs", "a.example", "lab", "hoster-processes", e.rt.Process())
	snap := waitFile(t, filepath.Join(dir, "snapshot-2026-11-22-11.jsonl"), 1)
	want := `{"t":1795345205,"process":"` + e.rt.Process() + `","instance":"` + a.inst + `","state":{"players":1,"note":"from serialise"}}`
	if snap[0] != want {
		t.Fatalf("snapshot\n%s\nwant\n%s", snap[0], want)
	}
	// The stats line of the interval that ended at 11:00:50 lands in the 11 o'clock file.
	clock.Set(time.Date(2026, 11, 22, 11, 0, 51, 0, time.UTC))
	stats := waitFile(t, filepath.Join(dir, "stats-2026-11-22-11.jsonl"), 1)
	if !strings.Contains(stats[0], `"players":1`) {
		t.Fatalf("stats line %s", stats[0])
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("files %v, want the 11 o'clock snapshot and stats files only", entries)
	}
}

// statsLines reads a stats file's lines as GameStatsLines.
func statsLines(t *testing.T, lines []string) []api.GameStatsLine {
	t.Helper()
	out := make([]api.GameStatsLine, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &out[i]); err != nil {
			t.Fatalf("stats line %q: %v", l, err)
		}
	}
	return out
}

// Games shorter than the interval are counted: each instance writes its
// last, partial, interval when it ends.
func TestShortGamesLeaveStatsLines(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)}
	logs := t.TempDir()
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4)}, func(o *Options) {
		o.LogsRoot, o.GamelogInterval, o.Now = logs, time.Minute, clock.Now
		o.EmptyGrace = time.Nanosecond // an empty instance ends at its next tick
	})
	path := filepath.Join(logs, "hoster-logs", "a.example", "lab", "hoster-processes", e.rt.Process(), "stats-2026-11-22-10.jsonl")
	seen := map[string]bool{}
	for i := range 3 {
		a := e.join(t, "a.example", "lab", "a")
		if seen[a.inst] {
			t.Fatalf("game %d joined instance %s, which had ended", i, a.inst)
		}
		seen[a.inst] = true
		a.send("move", map[string]any{"dx": 0.5})
		a.until("its move", func(m map[string]map[string]any) bool { return m[a.me]["x"] == 0.5 })
		clock.Add(time.Duration(10+i) * time.Second)
		a.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, ""))
		got := statsLines(t, waitFile(t, path, i+1))[i]
		if got.Instance != a.inst || !got.Ended || got.T != clock.Now().Unix() || got.Players != 0 ||
			got.Arrivals != 1 || got.Departures != 1 || got.Playtime != (api.SumCount{Sum: float64(10 + i), Count: 1}) ||
			got.Commands["move"] != 1 || got.CmdBytes.Count != 1 || got.UpdBytes.Count == 0 {
			t.Fatalf("game %d (instance %s): stats line %+v", i, a.inst, got)
		}
	}
}

// Shutting the server down writes the partial interval of each live
// instance, its players' sessions counted as ended; a hot reload within the
// interval counts nothing twice.
func TestShutdownWritesThePartialInterval(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)}
	logs := t.TempDir()
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4)}, func(o *Options) {
		o.LogsRoot, o.GamelogInterval, o.Now = logs, time.Minute, clock.Now
	})
	a := e.join(t, "a.example", "lab", "a")
	b := e.join(t, "a.example", "lab", "b")
	ra, rb, doneA, doneB := tallyBoth(a, b)
	frame := `{"c":"move","a":{"dx":0.25}}`
	for range 3 {
		a.ws.WriteMessage(websocket.TextMessage, []byte(frame))
	}
	a.until("three moves", func(m map[string]map[string]any) bool { return m[a.me]["x"] == 0.75 })
	clock.Add(15 * time.Second)

	// New code: every player is named v2 from its next tick on.
	dir := filepath.Join(e.root, "a.example", "lab")
	os.WriteFile(filepath.Join(dir, "hoster-instance/tick.js"),
		[]byte(`export default function (i) { for (const id in i.players) i.players[id].name = "v2"; }`), 0o644)
	if res, err := gen.Generate(e.root); err != nil || res.Failed() {
		t.Fatal(err, res.Problems())
	}
	e.rt.Reload("a.example", "lab")
	a.ws.WriteMessage(websocket.TextMessage, []byte(frame))
	final := func(m map[string]map[string]any) bool {
		return m[a.me]["x"] == 1.0 && m[a.me]["name"] == "v2" && m[b.me]["name"] == "v2"
	}
	a.until("the new code and a fourth move", final)
	b.until("the new code and a's fourth move", final)
	clock.Add(10 * time.Second)

	if err := e.rt.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-doneA
	<-doneB
	path := filepath.Join(logs, "hoster-logs", "a.example", "lab", "hoster-processes", e.rt.Process(), "stats-2026-11-22-10.jsonl")
	lines := readLines(t, path)
	if len(lines) != 1 {
		t.Fatalf("stats lines %q, want the one of the partial interval", lines)
	}
	want := withReceived(api.GameStatsLine{
		T: clock.Now().Unix(), Process: e.rt.Process(), Instance: a.inst,
		Players: 2, Entities: 1, Arrivals: 2, Departures: 2,
		Playtime: api.SumCount{Sum: 50, Count: 2},
		Commands: map[string]int64{"move": 4},
		CmdBytes: api.SumCount{Sum: float64(4 * len(frame)), Count: 4},
		Ended:    true,
	}, ra, rb)
	wb, _ := json.Marshal(want)
	if lines[0] != string(wb) {
		t.Fatalf("stats line\n%s\nwant\n%s", lines[0], wb)
	}
}

// In a fleet, each telemetry line names its node, so one game's lines of
// every node join; a server alone writes none.
func TestTelemetryNamesItsNode(t *testing.T) {
	logs := t.TempDir()
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4)}, func(o *Options) {
		o.LogsRoot, o.Node = logs, "n1"
	})
	a := e.join(t, "a.example", "lab", "a")
	if err := e.rt.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(logs, "hoster-logs", "a.example", "lab", "hoster-processes", e.rt.Process(), "stats-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("stats files %v, want one", files)
	}
	var line api.GameStatsLine
	if err := json.Unmarshal([]byte(readLines(t, files[0])[0]), &line); err != nil || line.Node != "n1" || line.Instance != a.inst {
		t.Fatalf("the stats line %+v (%v) does not name node n1", line, err)
	}
}
