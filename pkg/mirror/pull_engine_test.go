package mirror

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/server"
	"github.com/hoster-dev/hoster/pkg/tools"
)

// holding is a transport that lets each file answer's body give its first
// half, then holds it until want bodies are held at once: only a pull
// that keeps want fetches in flight gets past it (one that keeps fewer
// waits for ever, and go test's -timeout reports it).
type holding struct {
	next    http.RoundTripper
	want    int
	mu      sync.Mutex
	held    int
	reached chan struct{} // closed once want bodies are held
	release chan struct{} // closed by the test: the bodies go on
}

func (h *holding) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(r)
	if err != nil || !strings.HasSuffix(r.URL.Path, "/file") || resp.ContentLength < 2 {
		return resp, err
	}
	resp.Body = &heldBody{ReadCloser: resp.Body, h: h, half: resp.ContentLength / 2}
	return resp, nil
}

type heldBody struct {
	io.ReadCloser
	h    *holding
	half int64 // bytes still given before the hold; then -1
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.half == 0 {
		b.half = -1
		b.h.mu.Lock()
		if b.h.held++; b.h.held == b.h.want {
			close(b.h.reached)
		}
		b.h.mu.Unlock()
		<-b.h.release
	}
	if b.half > 0 && int64(len(p)) > b.half {
		p = p[:b.half]
	}
	n, err := b.ReadCloser.Read(p)
	if b.half > 0 {
		b.half -= int64(n)
	}
	return n, err
}

// unnamedIn counts the files this process has open in dir that have no
// name yet (pkg/atomicfile's, on Linux: O_TMPFILE, which /proc shows as
// "dir/#inode (deleted)"); 0 where /proc is not there.
func unnamedIn(dir string) int {
	fds, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, fd := range fds {
		to, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(to, dir+"/#") && strings.HasSuffix(to, " (deleted)") {
			n++
		}
	}
	return n
}

// farLink is the client as a pull sees it across a link of the given
// round trip: how many fetches it keeps in flight follows it.
type farLink struct {
	*apiclient.Client
	rtt time.Duration
}

func (f farLink) RTT() time.Duration { return f.rtt }

// A pull across a long round trip keeps many fetches in flight (48 at
// once, where the pull before the transfer engine kept 4), and writes every
// file atomically: while all 48 are half received, no file is in place.
// Into a folder that is there, each one's bytes are in a temporary file
// (named beside it, or on Linux one with no name yet in its folder); into
// a new folder, they are plain files in a hidden folder beside it, and the
// folder is not there. After, every file is exact and no temporary file or
// folder is left.
func TestPullKeepsManyInFlightAndWritesAtomically(t *testing.T) {
	for _, there := range []bool{true, false} {
		t.Run(map[bool]string{true: "folder there", false: "new folder"}[there], func(t *testing.T) {
			testManyInFlightAtomically(t, there)
		})
	}
}

func testManyInFlightAtomically(t *testing.T, there bool) {
	e := newPullEnv(t, api.Variant1)
	const n = 48
	var paths []string
	for i := range n {
		p := fmt.Sprintf("%sstats-2026-11-%02d-%02d.jsonl", gl, 1+i/24, i%24)
		e.appendTo(t, p, strings.Repeat(fmt.Sprintf("{\"i\":%d}\n", i), 50+i))
		paths = append(paths, p)
	}
	folder := filepath.Join(e.mirror, filepath.FromSlash(gl))
	if there {
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := &holding{want: n, reached: make(chan struct{}), release: make(chan struct{})}
	c, err := apiclient.NewClient(apiclient.ClientConfig{Server: e.base, Token: token, Attempts: 1,
		Wrap: func(t http.RoundTripper) http.RoundTripper { h.next = t; return h }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan PullSummary, 1)
	go func() {
		s, _, err := Pull(context.Background(), farLink{c, 50 * time.Millisecond},
			[]Part{PartGameLogs(filepath.Join(e.mirror, "hoster-logs"))}, PullOptions{Jobs: 64}, nil)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	<-h.reached
	pending := 0
	for _, p := range paths {
		dst := filepath.Join(e.mirror, filepath.FromSlash(p))
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("%s is in place while its body is half received", p)
		}
		temps, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*"))
		pending += len(temps)
	}
	if there {
		pending += unnamedIn(folder)
	} else {
		if _, err := os.Stat(folder); err == nil {
			t.Errorf("the new folder %s is there while its files are half received", folder)
		}
		hidden, _ := filepath.Glob(filepath.Join(filepath.Dir(folder), "."+filepath.Base(folder)+".tmp-*"))
		if len(hidden) != 1 {
			t.Fatalf("hidden folders beside the new one: %v, want 1", hidden)
		}
		entries, _ := os.ReadDir(hidden[0])
		pending += len(entries)
	}
	if pending != n {
		t.Errorf("%d files being written (in temporary files, or in the new folder's hidden one), want %d", pending, n)
	}
	close(h.release)
	if s := <-done; len(s.Failures) > 0 || s.Fetched != n {
		t.Fatalf("pull %+v", s)
	}
	e.sameTree(t, "hoster-logs")
	filepath.WalkDir(e.mirror, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// fillLogs puts a month in small of every kind of file in the logs root:
// the access logs, day-files, and (variant 1) hour files.
func fillLogs(t *testing.T, e *pullEnv, variant api.Variant) {
	e.appendTo(t, "web-logs/access.log", strings.Repeat("active\n", 3000))
	e.appendTo(t, "web-logs/access-1.log", strings.Repeat("rotated\n", 500))
	e.appendTo(t, "server-logs/cpu-2026-11-21.log", strings.Repeat("old day\n", 100))
	e.appendTo(t, "server-logs/cpu-2026-11-22.log", "today 1\n")
	e.appendTo(t, "server-logs/memory-2026-11-22.log", "")
	if variant == api.Variant1 {
		for h := range 24 {
			e.appendTo(t, fmt.Sprintf("%sstats-2026-11-22-%02d.jsonl", gl, h), strings.Repeat(fmt.Sprintf("{\"h\":%d}\n", h), h))
		}
	}
}

// sameMirror checks every file of the logs root has an exact copy in the
// mirror, a rotated access log under its key's name.
func sameMirror(t *testing.T, e *pullEnv) {
	t.Helper()
	e.sameTree(t, "server-logs")
	e.sameTree(t, "hoster-logs")
	for _, name := range []string{"access.log", "access-*.log"} {
		src, _ := filepath.Glob(filepath.Join(e.logs, "web-logs", name))
		dst, _ := filepath.Glob(filepath.Join(e.mirror, "web-logs", name))
		if len(src) != 1 || len(dst) != 1 {
			t.Fatalf("%s: %v in the logs, %v in the mirror", name, src, dst)
		}
		want, _ := os.ReadFile(src[0])
		if got, _ := os.ReadFile(dst[0]); string(got) != string(want) {
			t.Errorf("%s: the mirror has %d bytes, the logs %d", dst[0], len(got), len(want))
		}
	}
}

// pullAllAtOnce pulls the three parts as hoster pull does, the version
// asked beside the listings.
func pullAllAtOnce(t *testing.T, e *pullEnv, c *apiclient.Client) PullSummary {
	t.Helper()
	ctx := context.Background()
	s, errs, err := Pull(ctx, c, []Part{PartLogs(filepath.Join(e.mirror, "web-logs")), PartStats(filepath.Join(e.mirror, "server-logs")),
		PartGameLogs(filepath.Join(e.mirror, "hoster-logs"))}, PullOptions{Check: func() error { _, err := c.Version(ctx); return err }}, nil)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("pull: %v %v", err, errs)
	}
	return s
}

// A server that offers the batch download gets the small whole files in
// batches (here, one a part at most), in both variants, and the mirror is byte-exact; what grew is
// then fetched as tails, per file, as is every tail.
func TestPullBatchDownload(t *testing.T) {
	for _, v := range []api.Variant{api.Variant1, api.Variant2} {
		t.Run(fmt.Sprint("variant ", v), func(t *testing.T) {
			e := newPullEnv(t, v)
			fillLogs(t, e, v)
			c, _ := apiclient.NewClient(apiclient.ClientConfig{Server: e.base, Token: token, Attempts: 1})
			s := pullAllAtOnce(t, e, c)
			if !c.CanFetchBatch() || len(s.Failures) > 0 {
				t.Fatalf("first pull %+v (batch offered: %v)", s, c.CanFetchBatch())
			}
			sameMirror(t, e)
			reqs, _ := e.reset()
			batch := api.ToolsPath(api.Version, api.PathFilesBatch)
			parts := 3 // each part's files go as its listing comes
			if v == api.Variant2 {
				parts = 2
			}
			if reqs[batch] < 1 || reqs[batch] > parts || reqs[api.ToolsPath(api.Version, api.PathLogsFile)]+reqs[api.ToolsPath(api.Version, api.PathStatsFile)]+
				reqs[api.ToolsPath(api.Version, api.PathGameLogsFile)] != 0 {
				t.Errorf("first pull's requests %v, want every file in a batch, at most one a part", reqs)
			}
			e.appendTo(t, "web-logs/access.log", "grown\n")
			e.appendTo(t, "server-logs/cpu-2026-11-22.log", "today 2\n")
			s = pullAllAtOnce(t, e, c)
			reqs, wire := e.reset()
			if len(s.Failures) > 0 || s.Fetched != 2 || reqs[batch] != 0 || wire != int64(len("grown\ntoday 2\n")) {
				t.Errorf("growth pull %+v: requests %v, %d bytes", s, reqs, wire)
			}
			sameMirror(t, e)
		})
	}
}

// Against a server without the batch download (another server of the
// contract), every file is a GET of its own, and the mirror is the same.
func TestPullWithoutBatchDownload(t *testing.T) {
	e := newPullEnv(t, api.Variant1)
	routes := tools.Routes(tools.Options{LogsRoot: e.logs, Variant: api.Variant1})
	delete(routes, "POST "+api.ToolsPath(api.Version, api.PathFilesBatch))
	srv, err := server.New(server.Options{GamesRoot: filepath.Join(t.TempDir(), "g"), Token: token, Variant: api.Variant1, Routes: routes})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	fillLogs(t, e, api.Variant1)
	c, _ := apiclient.NewClient(apiclient.ClientConfig{Server: ts.URL, Token: token, Attempts: 1})
	s := pullAllAtOnce(t, e, c)
	if c.CanFetchBatch() || len(s.Failures) > 0 || s.Fetched != 29 {
		t.Fatalf("pull %+v (batch offered: %v)", s, c.CanFetchBatch())
	}
	sameMirror(t, e)
}

// A batch answer is held to the listing as a GET's is: an entry longer
// than a frozen file's listed size is refused, naming the file, and
// nothing of it is written; the other files of the batch are written.
func TestPullBatchEntryLongerThanListed(t *testing.T) {
	stats := api.StatsListing{Files: []api.StatsFile{
		{Name: "cpu-2026-11-20.log", Type: "cpu", Date: "2026-11-20", Size: 4},
		{Name: "cpu-2026-11-21.log", Type: "cpu", Date: "2026-11-21", Size: 4},
		{Name: "cpu-2026-11-22.log", Type: "cpu", Date: "2026-11-22", Size: 4},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathVersion, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"api":1,"batchDownload":true,"batchDownloadMaxFiles":10}`)
	})
	mux.HandleFunc("POST "+api.ToolsPath(api.Version, api.PathFilesBatch), func(w http.ResponseWriter, r *http.Request) {
		var req api.FetchRequest
		json.NewDecoder(r.Body).Decode(&req)
		bodies := map[string]string{"cpu-2026-11-20.log": "abcd", "cpu-2026-11-21.log": "abcdEXTRA", "cpu-2026-11-22.log": "wxyz"}
		tw := tar.NewWriter(w)
		for i, f := range req.Files {
			body := bodies[f.Name]
			tw.WriteHeader(&tar.Header{Name: fmt.Sprint(i), Size: int64(len(body)), Mode: 0o644, Typeflag: tar.TypeReg})
			tw.Write([]byte(body))
		}
		tw.Close()
	})
	mux.HandleFunc("GET "+api.ToolsPath(api.Version, api.PathStats), func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(stats)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c, _ := apiclient.NewClient(apiclient.ClientConfig{Server: ts.URL, Token: token, Attempts: 1})
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := PullStats(context.Background(), c, dir, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := failuresOf(s)
	if len(f) != 1 || !strings.Contains(f["cpu-2026-11-21.log"], "sent 9 bytes where it listed 4") {
		t.Fatalf("failures %v", f)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu-2026-11-21.log")); err == nil {
		t.Error("the refused file was written")
	}
	for name, want := range map[string]string{"cpu-2026-11-20.log": "abcd", "cpu-2026-11-22.log": "wxyz"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s: %q, want %q", name, b, want)
		}
	}
}

// listingHeld is a transport that holds the game-log listing's answer
// until a file's answer (a GET's, or a batch's) was read and closed: only a
// pull that fetches a part's files while another part is still being
// listed gets past it (one that waits for every listing first waits for
// ever, and go test's -timeout reports it).
type listingHeld struct {
	next    http.RoundTripper
	once    sync.Once
	fetched chan struct{} // closed once a file's answer was closed
}

func (h *listingHeld) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == api.ToolsPath(api.Version, api.PathGameLogs) {
		select {
		case <-h.fetched:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	resp, err := h.next.RoundTrip(r)
	if err == nil && (strings.HasSuffix(r.URL.Path, "/file") || r.URL.Path == api.ToolsPath(api.Version, api.PathFilesBatch)) {
		resp.Body = &closeSignal{ReadCloser: resp.Body, h: h}
	}
	return resp, err
}

type closeSignal struct {
	io.ReadCloser
	h *listingHeld
}

func (b *closeSignal) Close() error {
	err := b.ReadCloser.Close()
	b.h.once.Do(func() { close(b.h.fetched) })
	return err
}

// A pull fetches each part's files as its listing comes: the access logs
// and day-files are fetched while the game-log tree's listing is still
// awaited, with the batch download and without it, and the mirror is
// exact.
func TestPullFetchesAPartWhileAnotherIsListed(t *testing.T) {
	for _, batch := range []bool{true, false} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			e := newPullEnv(t, api.Variant1)
			fillLogs(t, e, api.Variant1)
			h := &listingHeld{fetched: make(chan struct{})}
			c, err := apiclient.NewClient(apiclient.ClientConfig{Server: e.base, Token: token, Attempts: 1,
				Wrap: func(t http.RoundTripper) http.RoundTripper { h.next = t; return h }})
			if err != nil {
				t.Fatal(err)
			}
			check := func() error { return nil }
			if batch {
				check = func() error { _, err := c.Version(context.Background()); return err }
			}
			s, errs, err := Pull(context.Background(), c, []Part{PartLogs(filepath.Join(e.mirror, "web-logs")),
				PartStats(filepath.Join(e.mirror, "server-logs")), PartGameLogs(filepath.Join(e.mirror, "hoster-logs"))},
				PullOptions{Check: check}, nil)
			if err != nil || errs[0] != nil || errs[1] != nil || errs[2] != nil || len(s.Failures) > 0 || c.CanFetchBatch() != batch {
				t.Fatalf("pull %+v: %v %v (batch offered: %v)", s, err, errs, c.CanFetchBatch())
			}
			sameMirror(t, e)
		})
	}
}
