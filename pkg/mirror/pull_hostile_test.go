package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/transfer"
)

// hostile is a tools server that misbehaves as a test tells it: it lists
// what the test gives and answers each file request with the test's
// handler. Handlers may wait on release, closed before the server is.
type hostile struct {
	stats    api.StatsListing
	gameLogs api.GameLogListing
	file     func(w http.ResponseWriter, r *http.Request, name string) // name: the name= or path= asked
	release  chan struct{}
	mu       sync.Mutex
	files    map[string]int // file requests by name
	url      string
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	h := &hostile{release: make(chan struct{}), files: map[string]int{}}
	mux := http.NewServeMux()
	listing := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(v) }
	}
	mux.HandleFunc("GET "+api.ToolsPath(api.Version, api.PathStats), listing(&h.stats))
	mux.HandleFunc("GET "+api.ToolsPath(api.Version, api.PathGameLogs), listing(&h.gameLogs))
	file := func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get(api.QueryName) + r.URL.Query().Get(api.QueryPath)
		h.mu.Lock()
		h.files[name]++
		h.mu.Unlock()
		h.file(w, r, name)
	}
	mux.HandleFunc("GET "+api.ToolsPath(api.Version, api.PathStatsFile), file)
	mux.HandleFunc("GET "+api.ToolsPath(api.Version, api.PathGameLogsFile), file)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(h.release) })
	h.url = srv.URL
	return h
}

// client is a client of the server with the given waits (0: the defaults).
func (h *hostile) client(t *testing.T, header, stall time.Duration) *apiclient.Client {
	t.Helper()
	c, err := apiclient.NewClient(apiclient.ClientConfig{Server: h.url, Token: token, Attempts: 1, HeaderTimeout: header, StallTimeout: stall})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *hostile) requests(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.files[name]
}

// endless writes chunks of x until the client hangs up, or 64 MiB (for
// the code before bodies were bounded, which read on: its test fails on
// what it read, not by filling the disk).
func endless(w http.ResponseWriter) {
	chunk := []byte(strings.Repeat("x", 64<<10))
	for range 1024 {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// counting is a Remote whose fetched bodies count the bytes read from them.
type counting struct {
	LogsRemote
	read atomic.Int64
}

func (c *counting) Fetch(ctx context.Context, route string, q url.Values, offset int64) (*transfer.Fetched, error) {
	f, err := c.LogsRemote.Fetch(ctx, route, q, offset)
	if err == nil {
		f.Body = countingBody{f.Body, &c.read}
	}
	return f, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func failuresOf(s PullSummary) map[string]string {
	m := map[string]string{}
	for _, f := range s.Failures {
		m[f.Path] = f.Error
	}
	return m
}

// Every body is bounded by the listed size: a frozen file's longer body is
// refused, naming it, after one byte more than listed; a growing file's is
// taken up to the listed size (what it grew since is the next run's), and
// so is a Range tail, up to the listed size minus the local one.
func TestPullBoundsBodiesByTheListedSize(t *testing.T) {
	h := newHostile(t)
	const (
		frozen   = "cpu-2026-11-20.log" // endless, no length
		declared = "cpu-2026-11-21.log" // a Content-Length over the listed size
		today    = "cpu-2026-11-22.log" // growing, endless
		tail     = "disk-2026-11-22.log"
	)
	h.stats.Files = []api.StatsFile{{Name: frozen, Type: "cpu", Size: 10}, {Name: declared, Type: "cpu", Size: 10},
		{Name: today, Type: "cpu", Size: 10}, {Name: tail, Type: "disk", Size: 10}}
	h.file = func(w http.ResponseWriter, r *http.Request, name string) {
		switch {
		case name == declared:
			w.Header().Set("Content-Length", "1000")
			io.WriteString(w, strings.Repeat("y", 1000))
		case name == tail && r.Header.Get("Range") == "bytes=4-":
			w.Header().Set("Content-Range", "bytes 4-9/*")
			w.WriteHeader(http.StatusPartialContent)
			endless(w)
		default:
			endless(w)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, tail), []byte("xxxx"), 0o644)
	remote := &counting{LogsRemote: h.client(t, 0, 0)}
	s, err := PullStats(context.Background(), remote, dir, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	fails := failuresOf(s)
	if len(fails) != 2 || !strings.Contains(fails[frozen], "the server sent more than the 10 bytes it listed") ||
		!strings.Contains(fails[declared], "the server sent 1000 bytes where it listed 10") {
		t.Fatalf("failures %v", fails)
	}
	for _, name := range []string{frozen, declared} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written from a body longer than listed", name)
		}
	}
	for _, name := range []string{today, tail} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != "xxxxxxxxxx" {
			t.Errorf("%s holds %d bytes, want the 10 listed", name, len(b))
		}
	}
	// 11 of the frozen file, none of the declared one, 10 of today's, 6 of the tail.
	if got := remote.read.Load(); got != 11+10+6 {
		t.Errorf("read %d bytes of the bodies, want 27", got)
	}
}

// A server that accepts a file request and never answers, or stops mid-body:
// the file fails, saying so, and the pull goes on and ends. The listing
// comes through a client with the default waits, the files through one
// whose wait under test is short.
func TestPullHangingServer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		header, stall time.Duration
		file          func(w http.ResponseWriter, release <-chan struct{})
		want          string
	}{
		{"no answer", 20 * time.Millisecond, time.Hour, func(w http.ResponseWriter, release <-chan struct{}) { <-release },
			"no answer came within 20ms"},
		{"stalled body", time.Hour, 20 * time.Millisecond, func(w http.ResponseWriter, release <-chan struct{}) {
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "half")
			w.(http.Flusher).Flush()
			<-release
		}, "the answer stalled: nothing came for 20ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostile(t)
			h.stats.Files = []api.StatsFile{{Name: "cpu-2026-11-20.log", Size: 10}, {Name: "cpu-2026-11-21.log", Size: 3}}
			h.file = func(w http.ResponseWriter, r *http.Request, name string) {
				if name == "cpu-2026-11-21.log" {
					io.WriteString(w, "ok\n")
					return
				}
				tc.file(w, h.release)
			}
			dir := t.TempDir()
			remote := fetchVia{LogsRemote: h.client(t, 0, 0), files: h.client(t, tc.header, tc.stall)}
			s, err := PullStats(context.Background(), remote, dir, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			if f := failuresOf(s); len(f) != 1 || !strings.Contains(f["cpu-2026-11-20.log"], tc.want) || s.Fetched != 1 {
				t.Fatalf("%+v", s)
			}
			if _, err := os.Stat(filepath.Join(dir, "cpu-2026-11-20.log")); err == nil {
				t.Error("the hung file was written")
			}
		})
	}
}

// fetchVia lists through one Remote and fetches through another.
type fetchVia struct {
	LogsRemote
	files LogsRemote
}

func (f fetchVia) Fetch(ctx context.Context, route string, q url.Values, offset int64) (*transfer.Fetched, error) {
	return f.files.Fetch(ctx, route, q, offset)
}

// A game-log path with a control character is refused as sync refuses such
// a name: no folder named with a newline, and the report's name is one
// line.
func TestPullRefusesControlCharacters(t *testing.T) {
	h := newHostile(t)
	bad := "a.com/g\n/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl"
	good := "a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl"
	h.gameLogs.Files = []api.GameLogFile{{Path: bad, Size: 3}, {Path: good, Size: 3}}
	h.file = func(w http.ResponseWriter, r *http.Request, name string) { io.WriteString(w, "{}\n") }
	dir := t.TempDir()
	s, err := PullGameLogs(context.Background(), h.client(t, 0, 0), dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	shown := `a.com/g\n/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl`
	if f := failuresOf(s); len(f) != 1 || !strings.Contains(f[shown], "holds a control character") || s.Fetched != 1 {
		t.Fatalf("%+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.com", "g\n")); err == nil {
		t.Error("a folder named with a newline was made")
	}
	if h.requests(bad) != 0 {
		t.Error("the refused path was fetched")
	}
}

// A listing that names one file many times gets it fetched once, and says
// so once.
func TestPullDuplicateListingFetchesOnce(t *testing.T) {
	h := newHostile(t)
	p := "a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl"
	for range 1000 {
		h.gameLogs.Files = append(h.gameLogs.Files, api.GameLogFile{Path: p, Size: 3})
	}
	h.file = func(w http.ResponseWriter, r *http.Request, name string) { io.WriteString(w, "{}\n") }
	dir := t.TempDir()
	s, err := PullGameLogs(context.Background(), h.client(t, 0, 0), dir, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.requests(p); n != 1 || s.Fetched != 1 {
		t.Fatalf("fetched %d times: %+v", n, s)
	}
	if f := failuresOf(s); len(f) != 1 || !strings.Contains(f[p], "listed it more than once (999 repeated entries") {
		t.Fatalf("failures %v", f)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))); string(b) != "{}\n" {
		t.Fatalf("mirrored %q", b)
	}
}

// A rotated log whose listed size shrank, and a past day-file rewritten
// longer with other bytes, replace the archived copies only once those are set
// aside beside them: nothing mirrored is lost, and the summary says where
// they went. A past day-file that grew late, beginning with what the mirror
// holds, is replaced as before: nothing set aside.
func TestPullKeepsArchivedBytes(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	rotated := "web-logs/access-2026-11-20T10-00-00.000.log"
	long := strings.Repeat("r", 100)
	e.appendTo(t, rotated, long)
	e.appendTo(t, "web-logs/access.log", "now\n")
	e.appendTo(t, "server-logs/cpu-2026-11-19.log", "old\n")
	e.appendTo(t, "server-logs/cpu-2026-11-20.log", "d1\n")
	e.appendTo(t, "server-logs/cpu-2026-11-22.log", "today\n")
	if s := e.pullAll(t); len(s.Failures) > 0 {
		t.Fatal(s.Failures)
	}
	p := filepath.Join(e.logs, rotated)
	fi, _ := os.Stat(p)
	os.WriteFile(p, []byte(strings.Repeat("s", 50)), 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	os.WriteFile(filepath.Join(e.logs, "server-logs/cpu-2026-11-19.log"), []byte("OLDER\n"), 0o644)
	e.appendTo(t, "server-logs/cpu-2026-11-20.log", "d2\n")
	s := e.pullAll(t)
	if len(s.Failures) > 0 {
		t.Fatal(s.Failures)
	}
	name := "access-" + itoa(fi.ModTime().UnixMilli()) + ".log"
	want := fmt.Sprintf("[{%s %s.kept-1 the server's copy, 50 bytes, does not begin with the 100 bytes archived} "+
		"{cpu-2026-11-19.log cpu-2026-11-19.log.kept-1 the server's copy, 6 bytes, does not begin with the 4 bytes archived}]", name, name)
	if got := fmt.Sprint(s.Kept); got != want {
		t.Errorf("kept %s\nwant %s", got, want)
	}
	for rel, content := range map[string]string{
		"web-logs/" + name:                      strings.Repeat("s", 50),
		"web-logs/" + name + ".kept-1":          long,
		"server-logs/cpu-2026-11-19.log":        "OLDER\n",
		"server-logs/cpu-2026-11-19.log.kept-1": "old\n",
		"server-logs/cpu-2026-11-20.log":        "d1\nd2\n",
		"server-logs/cpu-2026-11-20.log.kept-1": "",
		"server-logs/cpu-2026-11-22.log":        "today\n",
		"server-logs/cpu-2026-11-22.log.kept-1": "",
		"web-logs/access.log":                   "now\n",
		"web-logs/access.log.kept-1":            "",
	} {
		b, err := os.ReadFile(filepath.Join(e.mirror, filepath.FromSlash(rel)))
		if content == "" {
			if err == nil {
				t.Errorf("%s exists", rel)
			}
		} else if string(b) != content {
			t.Errorf("%s holds %q, want %q", rel, b, content)
		}
	}
	// The next run finds the mirror exact: nothing fetched, nothing kept.
	if s := e.pullAll(t); len(s.Failures) > 0 || s.Fetched != 0 || len(s.Kept) != 0 {
		t.Fatalf("the next run: %+v", s)
	}
}
