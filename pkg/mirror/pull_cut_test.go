package mirror

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
)

// batchCutter cuts the batch download's answers after a number of bytes
// of their body, the way a proxy that drops the connection does (Caddy
// 2.6 over HTTP/1.1 drops about one batch answer in 100: the client sees
// a 200 whose chunked body ends without its last chunk): the first times
// answers, or every one while times < 0.
type batchCutter struct {
	after int64
	mu    sync.Mutex
	times int
}

func (c *batchCutter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.ToolsPath(api.Version, api.PathFilesBatch) {
			c.mu.Lock()
			if c.times != 0 {
				w = &cutWriter{ResponseWriter: w, left: c.after}
				c.times--
			}
			c.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// cutWriter sends left bytes of the body, then drops the connection.
type cutWriter struct {
	http.ResponseWriter
	left int64
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if int64(len(b)) <= w.left {
		w.left -= int64(len(b))
		return w.ResponseWriter.Write(b)
	}
	w.ResponseWriter.Write(b[:w.left])
	w.ResponseWriter.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// newCutEnv is newPullEnv's server with c cutting its batch answers, and a
// client of it that tries a transient failure attempts times.
func newCutEnv(t *testing.T, variant api.Variant, c *batchCutter, attempts int) (*pullEnv, *apiclient.Client) {
	t.Helper()
	e := &pullEnv{mirror: t.TempDir(), reqs: map[string]int{}}
	s := contracttest.Start(t, contracttest.Options{Variant: variant, Token: token, Routes: toolsRoutes,
		Client: apiclient.ClientConfig{Attempts: 1}, Wrap: func(h http.Handler) http.Handler { return c.wrap(e.count(h)) }})
	e.base, e.logs, e.c = s.URL, s.LogsRoot, s.Client
	fillLogs(t, e, variant)
	client, err := apiclient.NewClient(apiclient.ClientConfig{Server: e.base, Token: token, Attempts: attempts})
	if err != nil {
		t.Fatal(err)
	}
	return e, client
}

// fileGets is how many per-file GETs reqs holds.
func fileGets(reqs map[string]int) int {
	return reqs[api.ToolsPath(api.Version, api.PathLogsFile)] + reqs[api.ToolsPath(api.Version, api.PathStatsFile)] +
		reqs[api.ToolsPath(api.Version, api.PathGameLogsFile)]
}

// A batch answer cut mid-stream is asked again from the file it was cut
// in: the pull ends with every file exact and no failure, in both
// variants, with a batch request more for each cut and no per-file GET.
func TestPullBatchCutIsResumed(t *testing.T) {
	for _, v := range []api.Variant{api.Variant1, api.Variant2} {
		for _, after := range []int64{0, 700, 3000} {
			t.Run(fmt.Sprintf("variant %d, cut after %d bytes", v, after), func(t *testing.T) {
				c := &batchCutter{after: after, times: 2}
				e, client := newCutEnv(t, v, c, 3) // the two cuts may fall on one batch
				s := pullAllAtOnce(t, e, client)
				if !client.CanFetchBatch() || len(s.Failures) > 0 {
					t.Fatalf("pull %+v (batch offered: %v)", s, client.CanFetchBatch())
				}
				sameMirror(t, e)
				reqs, _ := e.reset()
				if c.times != 0 || fileGets(reqs) != 0 {
					t.Errorf("requests %v, %d cuts not made: want the cut batches asked again, no GET", reqs, c.times)
				}
			})
		}
	}
}

// A batch answer cut each time it is asked again (a file that shrinks as
// it is sent cuts it so) has what it did not bring fetched a file at a
// time: the pull still ends with every file exact and no failure.
func TestPullBatchCutEachTimeFetchesEachFile(t *testing.T) {
	c := &batchCutter{after: 700, times: -1}
	e, client := newCutEnv(t, api.Variant1, c, 2)
	s := pullAllAtOnce(t, e, client)
	if len(s.Failures) > 0 || s.Fetched != 29 {
		t.Fatalf("pull %+v", s)
	}
	sameMirror(t, e)
	if reqs, _ := e.reset(); fileGets(reqs) == 0 {
		t.Errorf("requests %v: want the files the cut batches did not bring fetched a file at a time", reqs)
	}
}

// When the batch answers and the per-file answers are all cut, the pull
// ends (it does not hang), each file not fetched is a failure that names
// it, and the mirror holds only whole files: no part of a cut one, and
// no temporary file.
func TestPullEverythingCutFailsEachFile(t *testing.T) {
	c := &batchCutter{after: 700, times: -1}
	e, client := newCutEnv(t, api.Variant1, c, 2)
	e.cutAt = 1
	s := pullAllAtOnce(t, e, client)
	failed := failuresOf(s)
	if s.Fetched+len(failed) != 29 || len(failed) == 0 {
		t.Fatalf("pull %+v: want a failure for every file not fetched", s)
	}
	for path, why := range failed {
		if !strings.Contains(why, "nothing was written") {
			t.Errorf("%s: %q, want it to say nothing was written", path, why)
		}
	}
	whole := map[string]bool{}
	filepath.WalkDir(e.logs, func(p string, d os.DirEntry, err error) error {
		if b, rerr := os.ReadFile(p); err == nil && !d.IsDir() && rerr == nil {
			whole[string(b)] = true
		}
		return nil
	})
	filepath.WalkDir(e.mirror, func(p string, d os.DirEntry, err error) error {
		if b, rerr := os.ReadFile(p); err == nil && !d.IsDir() && (rerr != nil || !whole[string(b)]) {
			t.Errorf("%s: %d bytes, no whole file of the server's (%v)", p, len(b), rerr)
		}
		return nil
	})
	if n := unnamedIn(e.mirror); n > 0 {
		t.Errorf("%d unnamed temporary files left open", n)
	}
}

// Batch downloads one after another keep their HTTP/1.1 connection: each
// answer is read to its end (the tar's and the body's), or the client
// would close the connection and open a new one for each batch.
func TestBatchesKeepTheirConnection(t *testing.T) {
	var conns atomic.Int32
	e := &pullEnv{mirror: t.TempDir(), reqs: map[string]int{}}
	s := contracttest.Start(t, contracttest.Options{Variant: api.Variant1, Token: token, Routes: toolsRoutes,
		Client: apiclient.ClientConfig{Attempts: 1}, Wrap: e.count, Unstarted: func(hs *httptest.Server) {
			hs.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
		}})
	e.base, e.logs, e.c = s.URL, s.LogsRoot, s.Client
	paths := plantFolders(t, e, 3, "a.com")
	for _, p := range paths { // more than the client reads at once
		e.appendTo(t, "hoster-logs/"+p, strings.Repeat("y", 300<<10))
	}
	files := make([]api.FetchFile, len(paths))
	for i, p := range paths {
		files[i] = api.FetchFile{Route: api.PathGameLogsFile, Path: p}
	}
	for range 3 {
		got := 0
		err := e.c.FetchFiles(context.Background(), files, func(i int, body io.Reader, n int64) {
			io.Copy(io.Discard, body)
			got++
		})
		if err != nil || got != len(files) {
			t.Fatalf("a batch of %d files: %d came, %v", len(files), got, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("three batches one after another opened %d connections, want 1", n)
	}
}
