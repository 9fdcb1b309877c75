package mirror

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
)

// The environment variables that make TestPullKilledHelper a pull into a
// folder from a server, for TestPullKilledLeavesNoPartialFolder to kill.
const (
	envPullInto = "HOSTER_TEST_PULL_INTO"
	envPullFrom = "HOSTER_TEST_PULL_FROM"
)

// TestPullKilledHelper is the pull TestPullKilledLeavesNoPartialFolder
// kills: run in a process of its own, it pulls the game logs, printing
// each file it fetched.
func TestPullKilledHelper(t *testing.T) {
	dir := os.Getenv(envPullInto)
	if dir == "" {
		t.Skip("run by TestPullKilledLeavesNoPartialFolder")
	}
	ctx := context.Background()
	c, err := apiclient.NewClient(apiclient.ClientConfig{Server: os.Getenv(envPullFrom), Token: token, Attempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(ctx); err != nil { // learns that the server offers the batch download
		t.Fatal(err)
	}
	PullGameLogs(ctx, c, dir, 4, printer{})
}

// printer prints each fetch done, a line each.
type printer struct{ NopReporter }

func (printer) Done(op Op, err error) { fmt.Printf("done %s %v\n", op.Path, err) }

// stallOnce holds the first batch answer after a number of its bytes, until
// released: the pull it serves is then killed.
type stallOnce struct {
	after   int64
	release chan struct{}
	started atomic.Bool
}

func (s *stallOnce) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.ToolsPath(api.Version, api.PathFilesBatch) && s.started.CompareAndSwap(false, true) {
			w = &stallWriter{ResponseWriter: w, left: s.after, release: s.release}
		}
		h.ServeHTTP(w, r)
	})
}

// stallWriter sends left bytes of the body, then waits for release and
// drops the connection.
type stallWriter struct {
	http.ResponseWriter
	left    int64
	release chan struct{}
}

func (w *stallWriter) Write(b []byte) (int, error) {
	if int64(len(b)) <= w.left {
		w.left -= int64(len(b))
		return w.ResponseWriter.Write(b)
	}
	w.ResponseWriter.Write(b[:w.left])
	w.ResponseWriter.(http.Flusher).Flush()
	<-w.release
	panic(http.ErrAbortHandler)
}

// A pull killed (SIGKILL, as when its machine stops) while the files of a
// folder new to the mirror are coming leaves no folder under that name,
// partial or not: only a hidden one beside it, holding the files done. The
// next pull removes that and mirrors every file exact, leaving nothing
// hidden. The folder's 200 files come in two batches (128 a batch at
// most): the first asked is held part-way, and the pull killed once the
// other is done.
func TestPullKilledLeavesNoPartialFolder(t *testing.T) {
	s := &stallOnce{after: 6000, release: make(chan struct{})}
	e := &pullEnv{mirror: t.TempDir(), reqs: map[string]int{}}
	env := contracttest.Start(t, contracttest.Options{Variant: api.Variant1, Token: token, Routes: toolsRoutes,
		Client: apiclient.ClientConfig{Attempts: 1}, Wrap: func(h http.Handler) http.Handler { return s.wrap(e.count(h)) }})
	e.base, e.logs, e.c = env.URL, env.LogsRoot, env.Client
	const n = 200
	for i := range n {
		e.appendTo(t, fmt.Sprintf("%sstats-2026-11-%02d-%02d.jsonl", gl, 1+i/24, i%24), strings.Repeat(fmt.Sprintf("{\"i\":%d}\n", i), 40))
	}
	dir := filepath.Join(e.mirror, "hoster-logs")
	folder := filepath.Join(e.mirror, filepath.FromSlash(gl))

	cmd := exec.Command(os.Args[0], "-test.run=^TestPullKilledHelper$")
	cmd.Env = append(os.Environ(), envPullInto+"="+dir, envPullFrom+"="+e.base)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "done ") {
	}
	if !strings.HasSuffix(lines.Text(), " <nil>") {
		t.Fatalf("the pull's first file: %q, want one fetched", lines.Text())
	}
	cmd.Process.Kill()
	cmd.Wait()
	close(s.release)

	if _, err := os.Lstat(folder); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(folder)
		t.Fatalf("the new folder is there after the pull was killed (%v), with %d files", err, len(entries))
	}
	hidden, _ := filepath.Glob(filepath.Join(filepath.Dir(folder), "."+filepath.Base(folder)+".tmp-*"))
	if len(hidden) != 1 {
		t.Fatalf("hidden folders %v, want the killed pull's one", hidden)
	}
	if entries, _ := os.ReadDir(hidden[0]); len(entries) == 0 {
		t.Fatal("the killed pull's hidden folder holds no file, though it fetched some")
	}

	if sum, err := PullGameLogs(context.Background(), e.c, dir, 4, nil); err != nil || len(sum.Failures) > 0 || sum.Fetched != n {
		t.Fatalf("the next pull: %+v %v", sum, err)
	}
	e.sameTree(t, "hoster-logs")
	noneHidden(t, e.mirror)
}

// noneHidden fails if a temporary file or hidden folder is left under dir.
func noneHidden(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// A pull whose batch answers are cut and where one file of a new folder
// fails on its own too puts the folder in place with every other file
// exact and none of the failed one; the next pull brings it.
func TestPullNewFolderWithAFailedFile(t *testing.T) {
	const failing = "stats-2026-11-22-05.jsonl"
	fail := true
	c := &batchCutter{after: 700, times: -1}
	e := &pullEnv{mirror: t.TempDir(), reqs: map[string]int{}}
	env := contracttest.Start(t, contracttest.Options{Variant: api.Variant1, Token: token, Routes: toolsRoutes,
		Client: apiclient.ClientConfig{Attempts: 1}, Wrap: func(h http.Handler) http.Handler {
			h = c.wrap(e.count(h))
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if fail && strings.HasSuffix(r.URL.Query().Get(api.QueryPath), failing) {
					http.Error(w, "not yours", http.StatusForbidden)
					return
				}
				h.ServeHTTP(w, r)
			})
		}})
	e.base, e.logs, e.c = env.URL, env.LogsRoot, env.Client
	for h := range 24 {
		e.appendTo(t, fmt.Sprintf("%sstats-2026-11-22-%02d.jsonl", gl, h), strings.Repeat(fmt.Sprintf("{\"h\":%d}\n", h), 40))
	}
	if _, err := e.c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.mirror, "hoster-logs")
	sum, err := PullGameLogs(context.Background(), e.c, dir, 4, nil)
	if err != nil || sum.Fetched != 23 || len(sum.Failures) != 1 || !strings.HasSuffix(sum.Failures[0].Path, failing) {
		t.Fatalf("pull %+v %v: want every file but %s", sum, err, failing)
	}
	folder := filepath.Join(e.mirror, filepath.FromSlash(gl))
	if _, err := os.Lstat(filepath.Join(folder, failing)); !os.IsNotExist(err) {
		t.Errorf("the failed file is in the folder: %v", err)
	}
	if entries, err := os.ReadDir(folder); err != nil || len(entries) != 23 {
		t.Fatalf("the new folder holds %d files (%v), want 23", len(entries), err)
	}
	noneHidden(t, e.mirror)

	fail, c.times = false, 0
	if sum, err := PullGameLogs(context.Background(), e.c, dir, 4, nil); err != nil || len(sum.Failures) > 0 || sum.Fetched != 1 {
		t.Fatalf("the next pull: %+v %v", sum, err)
	}
	e.sameTree(t, "hoster-logs")
	noneHidden(t, e.mirror)
}
