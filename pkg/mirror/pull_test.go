package mirror

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/tools"
)

type pullEnv struct {
	base   string // the server's URL
	logs   string // server {logs_root}
	mirror string
	c      *apiclient.Client
	mu     sync.Mutex
	reqs   map[string]int // by path
	bytes  int64          // body bytes of file answers
	cutAt  int64          // when > 0, cut file answers after this many bytes
}

func newPullEnv(t testing.TB, variant api.Variant) *pullEnv {
	t.Helper()
	e := &pullEnv{mirror: t.TempDir(), reqs: map[string]int{}}
	s := contracttest.Start(t, contracttest.Options{Variant: variant, Token: token, Routes: toolsRoutes,
		Client: apiclient.ClientConfig{Attempts: 1}, Wrap: e.count})
	e.base, e.logs, e.c = s.URL, s.LogsRoot, s.Client
	return e
}

// toolsRoutes are the tools API's routes of the harness's server.
func toolsRoutes(s *contracttest.Env) map[string]http.Handler {
	return tools.Routes(tools.Options{LogsRoot: s.LogsRoot, Variant: s.Variant})
}

// count serves h counting requests and file bytes, and cutting file
// answers at cutAt.
func (e *pullEnv) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.reqs[r.URL.Path]++
		cut := e.cutAt
		e.mu.Unlock()
		cw := &countWriter{ResponseWriter: w, e: e, cut: cut}
		h.ServeHTTP(cw, r)
		if cw.cutNow {
			// Hang up mid-body, like a dropped connection.
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, _ := hj.Hijack()
				conn.Close()
			}
		}
	})
}

func (e *pullEnv) urlFor(path string) string { return e.base + path }

type countWriter struct {
	http.ResponseWriter
	e      *pullEnv
	cut    int64
	sent   int64
	cutNow bool
}

func (w *countWriter) Write(b []byte) (int, error) {
	if w.Header().Get("Content-Type") == "application/octet-stream" {
		if w.cut > 0 && w.sent+int64(len(b)) > w.cut {
			b = b[:w.cut-w.sent]
			w.cutNow = true
		}
		w.sent += int64(len(b))
		w.e.mu.Lock()
		w.e.bytes += int64(len(b))
		w.e.mu.Unlock()
		if w.cutNow {
			n, _ := w.ResponseWriter.Write(b)
			w.ResponseWriter.(http.Flusher).Flush()
			return n, net.ErrClosed
		}
	}
	return w.ResponseWriter.Write(b)
}

func (e *pullEnv) reset() (map[string]int, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, b := e.reqs, e.bytes
	e.reqs, e.bytes = map[string]int{}, 0
	return r, b
}

func (e *pullEnv) appendTo(t testing.TB, rel, s string) {
	p := filepath.Join(e.logs, filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o755)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func (e *pullEnv) pullAll(t *testing.T) PullSummary {
	t.Helper()
	ctx := context.Background()
	var sum PullSummary
	for _, p := range []struct {
		f   func(context.Context, LogsRemote, string, int, Reporter) (PullSummary, error)
		dir string
	}{{PullLogs, "web-logs"}, {PullStats, "server-logs"}, {PullGameLogs, "hoster-logs"}} {
		s, err := p.f(ctx, e.c, filepath.Join(e.mirror, p.dir), 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum.add(s)
	}
	return sum
}

// sameTree checks every server file has an exact copy in the mirror.
func (e *pullEnv) sameTree(t *testing.T, rel string) {
	t.Helper()
	filepath.WalkDir(filepath.Join(e.logs, rel), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		r, _ := filepath.Rel(e.logs, p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(e.mirror, r))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: mirror has %d bytes (%v), server %d", r, len(got), err, len(want))
		}
		return nil
	})
}

const gl = "hoster-logs/a.com/g/hoster-processes/0123456789ab/"

func TestPullGrowthAcrossRuns(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	e.appendTo(t, "web-logs/access.log", strings.Repeat("line one\n", 100))
	e.appendTo(t, "server-logs/cpu-2026-11-21.log", "old day\n")
	e.appendTo(t, "server-logs/cpu-2026-11-22.log", "today 1\n")
	e.appendTo(t, gl+"stats-2026-11-22-09.jsonl", "{\"h\":9}\n")
	e.appendTo(t, gl+"stats-2026-11-22-10.jsonl", "{\"h\":10}\n")
	if s := e.pullAll(t); len(s.Failures) > 0 || s.Fetched != 5 {
		t.Fatalf("first pull %+v", s)
	}
	e.sameTree(t, ".")

	// Growth: only the new bytes cross the wire.
	e.reset()
	e.appendTo(t, "web-logs/access.log", "line two\n")
	e.appendTo(t, "server-logs/cpu-2026-11-22.log", "today 2\n")
	e.appendTo(t, gl+"stats-2026-11-22-10.jsonl", "{\"h\":10,\"more\":1}\n")
	s := e.pullAll(t)
	_, wire := e.reset()
	if len(s.Failures) > 0 || s.Fetched != 3 || wire != int64(len("line two\n")+len("today 2\n")+len("{\"h\":10,\"more\":1}\n")) {
		t.Fatalf("growth pull %+v, %d bytes on the wire", s, wire)
	}
	e.sameTree(t, ".")

	// Unchanged server: only the three listings are requested.
	s = e.pullAll(t)
	reqs, wire := e.reset()
	total := 0
	for _, n := range reqs {
		total += n
	}
	if total != 3 || wire != 0 || s.Unchanged != 5 {
		t.Fatalf("unchanged pull made %v (%d bytes), %+v", reqs, wire, s)
	}
}

func TestPullRotation(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	e.appendTo(t, "web-logs/access.log", "a1\na2\n")
	e.pullAll(t)
	// Rotate: the active log becomes access-<time>.log; a new active starts.
	os.Rename(filepath.Join(e.logs, "web-logs/access.log"), filepath.Join(e.logs, "web-logs/access-2026-11-22T10-00-00.000.log"))
	e.appendTo(t, "web-logs/access.log", "b1\n")
	s := e.pullAll(t)
	if len(s.Failures) > 0 {
		t.Fatal(s.Failures)
	}
	fi, _ := os.Stat(filepath.Join(e.logs, "web-logs/access-2026-11-22T10-00-00.000.log"))
	rotated, _ := os.ReadFile(filepath.Join(e.mirror, "web-logs", "access-"+itoa(fi.ModTime().UnixMilli())+".log"))
	active, _ := os.ReadFile(filepath.Join(e.mirror, "web-logs", "access.log"))
	if string(rotated) != "a1\na2\n" || string(active) != "b1\n" {
		t.Fatalf("after rotation: rotated %q, active %q", rotated, active)
	}
	// Retention on the server keeps the local archive.
	os.Remove(filepath.Join(e.logs, "web-logs/access-2026-11-22T10-00-00.000.log"))
	e.pullAll(t)
	if _, err := os.Stat(filepath.Join(e.mirror, "web-logs", "access-"+itoa(fi.ModTime().UnixMilli())+".log")); err != nil {
		t.Fatal("a rotated log removed by the server's retention left the archive")
	}
	// An active log smaller on the server than locally is a reset.
	os.WriteFile(filepath.Join(e.logs, "web-logs/access.log"), []byte("c"), 0o644)
	e.pullAll(t)
	if active, _ := os.ReadFile(filepath.Join(e.mirror, "web-logs", "access.log")); string(active) != "c" {
		t.Fatalf("after a shrink: %q", active)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestPullCutConnectionThenRerun(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	e.appendTo(t, "web-logs/access.log", big)
	e.appendTo(t, "server-logs/cpu-2026-11-21.log", big)
	e.appendTo(t, "server-logs/cpu-2026-11-22.log", big)
	e.appendTo(t, gl+"stats-2026-11-22-09.jsonl", big)
	e.cutAt = 300 << 10
	s := e.pullAll(t)
	if len(s.Failures) == 0 {
		t.Fatal("no transfer failed although every one was cut")
	}
	// Nothing half-written: every file is absent or a prefix of the server's.
	filepath.WalkDir(e.mirror, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if strings.Contains(d.Name(), ".tmp-") {
				t.Errorf("temporary file left: %s", p)
			}
			b, _ := os.ReadFile(p)
			if !strings.HasPrefix(big, string(b)) {
				t.Errorf("%s is not a prefix of the server's file", p)
			}
			if strings.Contains(p, "2026-11-21") && len(b) != len(big) {
				t.Errorf("a frozen file was left partial: %s (%d bytes)", p, len(b))
			}
		}
		return nil
	})
	e.cutAt = 0
	if s := e.pullAll(t); len(s.Failures) > 0 {
		t.Fatal(s.Failures)
	}
	e.sameTree(t, ".")
}

func TestPullVariant2GameLogs(t *testing.T) {
	e := newPullEnv(t, api.Variant2)
	_, err := PullGameLogs(context.Background(), e.c, e.mirror, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("variant 2 game logs: %v", err)
	}
}

// A server that lists a path outside the layout cannot make the client write there.
type evilRemote struct{ LogsRemote }

func (evilRemote) GameLogs(context.Context) (api.GameLogListing, error) {
	return api.GameLogListing{Files: []api.GameLogFile{{Path: "../../escape/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", Size: 3}}}, nil
}

func TestPullRefusesEvilPaths(t *testing.T) {
	dir := t.TempDir()
	mirror := filepath.Join(dir, "m")
	s, err := PullGameLogs(context.Background(), evilRemote{}, mirror, 1, nil)
	if err != nil || len(s.Failures) != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "escape")); err == nil {
		t.Fatal("wrote outside the mirror")
	}
}

// TestPullRemovesStaleParts: the temporary files of a pull that was killed
// mid-fetch are removed by the next run; other hidden files are not.
func TestPullRemovesStaleParts(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	e.appendTo(t, "web-logs/access.log", "line\n")
	e.appendTo(t, "server-logs/cpu-2026-11-21.log", "line\n")
	e.appendTo(t, gl+"stats-2026-11-22-09.jsonl", "line\n")
	stale := []string{
		"web-logs/.access.log.tmp-123456",
		"web-logs/.access-1763800000.log.tmp-99",
		"server-logs/.cpu-2026-11-20.log.tmp-42",
		gl + ".stats-2026-11-22-09.jsonl.tmp-7",
	}
	kept := []string{"web-logs/.notes.tmp-1", "server-logs/.cpu-2026-11-20.log.tmp-x"}
	for _, p := range append(append([]string{}, stale...), kept...) {
		p = filepath.Join(e.mirror, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("half"), 0o644)
	}
	if s := e.pullAll(t); len(s.Failures) > 0 {
		t.Fatal(s.Failures)
	}
	for _, p := range stale {
		if _, err := os.Stat(filepath.Join(e.mirror, filepath.FromSlash(p))); err == nil {
			t.Errorf("stale part %s left by the next pull", p)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(filepath.Join(e.mirror, filepath.FromSlash(p))); err != nil {
			t.Errorf("%s is not a pull's part but was removed", p)
		}
	}
}

// A frozen file rewritten on the server (a rotated log, a past stats day)
// whose listed size differs from the local copy is fetched again whole,
// never completed with a Range append: the mirror ends byte-exact.
func TestPullRewrittenFrozenFilesWhole(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	rotated := "web-logs/access-2026-11-20T10-00-00.000.log"
	e.appendTo(t, rotated, "r1\n")
	e.appendTo(t, "web-logs/access.log", "now\n")
	e.appendTo(t, "server-logs/cpu-2026-11-20.log", "d1\n")
	e.appendTo(t, "server-logs/cpu-2026-11-22.log", "today\n")
	e.appendTo(t, gl+"stats-2026-11-22-09.jsonl", "{\"h\":9}\n")
	e.appendTo(t, gl+"stats-2026-11-22-10.jsonl", "{\"h\":10}\n")
	if s := e.pullAll(t); len(s.Failures) > 0 {
		t.Fatal(s.Failures)
	}
	// Rewritten, longer, with different leading bytes; the rotated log
	// keeps its modification time, so its timestamp (and local name) stays.
	p := filepath.Join(e.logs, rotated)
	fi, _ := os.Stat(p)
	os.WriteFile(p, []byte("XX\nr2\n"), 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	os.WriteFile(filepath.Join(e.logs, "server-logs/cpu-2026-11-20.log"), []byte("YY\nd2\n"), 0o644)
	e.reset()
	if s := e.pullAll(t); len(s.Failures) > 0 {
		t.Fatal(s.Failures)
	}
	got, _ := os.ReadFile(filepath.Join(e.mirror, "web-logs", "access-"+itoa(fi.ModTime().UnixMilli())+".log"))
	if string(got) != "XX\nr2\n" {
		t.Errorf("rotated log mirrored as %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(e.mirror, "server-logs/cpu-2026-11-20.log")); string(got) != "YY\nd2\n" {
		t.Errorf("past day-file mirrored as %q", got)
	}

	// A past game-log hour that grew is completed by its tail, as the
	// contract has it: only the new bytes cross the wire.
	e.appendTo(t, gl+"stats-2026-11-22-09.jsonl", "{\"late\":1}\n")
	e.reset()
	if s := e.pullAll(t); len(s.Failures) > 0 || s.Fetched != 1 {
		t.Fatalf("%+v", s)
	}
	if _, wire := e.reset(); wire != int64(len("{\"late\":1}\n")) {
		t.Errorf("a grown game-log hour moved %d bytes, want only its tail", wire)
	}
	e.sameTree(t, "server-logs")
	e.sameTree(t, "hoster-logs")
}
