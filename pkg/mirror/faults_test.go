package mirror

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/server"
)

// TestKindChangesConverge: a folder that became a file, and a file that
// became a folder, each converge in one sync.
func TestKindChangesConverge(t *testing.T) {
	contracttest.EachVariant(t, func(t *testing.T, variant api.Variant) {
		f := newFixture(t, variant)
		write(t, f.root, "a.com/g/hoster-game.json", cfg)
		write(t, f.root, "a.com/g/docs/a.txt", "a")
		write(t, f.root, "a.com/g/docs/deep/b.txt", "b")
		write(t, f.root, "a.com/g/notes", "a file")
		if sum, err := f.sync(t, SyncOptions{}); err != nil || len(sum.Failures) > 0 {
			t.Fatalf("first sync: %v %+v", err, sum.Failures)
		}
		os.RemoveAll(filepath.Join(f.root, "a.com/g/docs"))
		write(t, f.root, "a.com/g/docs", "now a file")
		os.Remove(filepath.Join(f.root, "a.com/g/notes"))
		write(t, f.root, "a.com/g/notes/n.txt", "now a folder")
		sum, err := f.sync(t, SyncOptions{})
		if err != nil || len(sum.Failures) > 0 || sum.Differ != 0 {
			t.Fatalf("kind-change sync: %v %+v", err, sum)
		}
		if got := fmt.Sprint(f.serverFiles(t)); got != "[a.com/g/docs a.com/g/hoster-game.json a.com/g/notes/n.txt]" {
			t.Fatalf("server holds %s", got)
		}
		f.cnt.reset()
		if sum, err := f.sync(t, SyncOptions{}); err != nil || sum.Uploaded+sum.Deleted != 0 {
			t.Fatalf("not converged: %v %+v", err, sum)
		}
	})
}

// TestFailedUploadKeepsOnlyItsGamesDeletes: a failed upload holds back the
// deletes of its own game only.
func TestFailedUploadKeepsOnlyItsGamesDeletes(t *testing.T) {
	f := newFixture(t, api.Variant1)
	f.failUploadsOf("bad.js")
	writeFiles(t, f.root, "a.com/one/hoster-game.json", cfg, "a.com/one/bad.js", "b", "a.com/two/hoster-game.json", cfg)
	writeFiles(t, f.games, "a.com/one/old.js", "o", "a.com/two/old.js", "o")
	sum, err := f.sync(t, SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The failed upload, and its game's config held back behind it.
	if len(sum.Failures) != 2 || sum.Failures[0].Path != "a.com/one/bad.js" || sum.Failures[1].Path != "a.com/one/hoster-game.json" ||
		!sum.DeletesSkipped || sum.Deleted != 1 || sum.Uploaded != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(f.games, "a.com/one/old.js")); err != nil {
		t.Fatal("a delete ran in the game whose upload failed")
	}
	if _, err := os.Stat(filepath.Join(f.games, "a.com/two/old.js")); !os.IsNotExist(err) {
		t.Fatal("the other game's delete did not run")
	}
}

// TestFullDiskFreedByDeletingLocally: with the server's disk full, deleting
// files locally frees it within the same sync. The client knows the disk is
// full by the answer's machine-readable cause, whatever its words: a second
// run rewords the server's answers, so only the cause tells it. The games
// root is a small tmpfs (root only).
func TestFullDiskFreedByDeletingLocally(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	for _, variant := range []api.Variant{api.Variant1, api.Variant2} {
		for _, reworded := range []bool{false, true} {
			t.Run(fmt.Sprintf("variant%d/reworded=%v", variant, reworded), func(t *testing.T) {
				fullDiskSync(t, variant, reworded)
			})
		}
	}
}

func fullDiskSync(t *testing.T, variant api.Variant, reworded bool) {
	games := t.TempDir()
	if err := syscall.Mount("tmpfs", games, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(games, syscall.MNT_DETACH) })
	srv, err := server.New(server.Options{GamesRoot: games, Token: token, Variant: variant})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if reworded {
		h = reword(h, "no space left on device", "the disk is full")
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	c, _ := apiclient.NewClient(apiclient.ClientConfig{Server: ts.URL, Token: token, Attempts: 2, RetryBase: 1})
	f := &fixture{root: t.TempDir(), games: games, c: c}
	write(t, f.root, "a.com/g/hoster-game.json", cfg)
	write(t, f.root, "a.com/g/old.bin", strings.Repeat("o", 700<<10))
	if sum, err := f.sync(t, SyncOptions{}); err != nil || len(sum.Failures) > 0 {
		t.Fatalf("first sync: %v %+v", err, sum.Failures)
	}
	os.Remove(filepath.Join(f.root, "a.com/g/old.bin"))
	write(t, f.root, "a.com/g/new.bin", strings.Repeat("n", 700<<10))
	sum, err := f.sync(t, SyncOptions{})
	if err != nil || len(sum.Failures) > 0 || sum.Deleted != 1 || sum.Uploaded != 1 {
		t.Fatalf("the sync did not free the disk: %v %d uploaded, %d deleted, %+v", err, sum.Uploaded, sum.Deleted, sum.Failures)
	}
	if len(sum.Notes) != 1 || !strings.Contains(sum.Notes[0], "out of space") {
		t.Fatalf("notes %q", sum.Notes)
	}
	if got := fmt.Sprint(f.serverFiles(t)); got != "[a.com/g/hoster-game.json a.com/g/new.bin]" {
		t.Fatalf("server holds %s", got)
	}
}

// reword serves h with old replaced by new in every answer's body.
func reword(h http.Handler, old, new string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		io.WriteString(w, strings.ReplaceAll(rec.Body.String(), old, new))
	})
}

// TestOutOfSpaceByCauseOrWords: the client knows a full disk by the
// answer's cause, or, from a server that tells none (before the cause, or
// another server of the contract), by the system's words for ENOSPC.
func TestOutOfSpaceByCauseOrWords(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&apiclient.Error{Op: "uploading a", Msg: "the disk is full", Reason: api.CauseNoSpace}, true},
		{fmt.Errorf("batch: %w", &apiclient.Error{Op: "uploading a", Status: 500, Msg: "quota", Reason: api.CauseNoSpace}), true},
		{&apiclient.Error{Op: "uploading a", Status: 500, Msg: "no space left on device"}, true},
		{&apiclient.Error{Op: "uploading a", Status: 500, Msg: "permission denied"}, false},
		{&apiclient.Error{Op: "uploading a", Msg: "odd", Reason: "a cause from the future"}, false},
		{nil, false},
	} {
		if got := outOfSpace(tc.err); got != tc.want {
			t.Errorf("outOfSpace(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// meddler is a Remote that runs something of its own before the first
// upload goes out: another sync, for instance.
type meddler struct {
	Remote
	once sync.Once
	do   func()
}

func (m *meddler) PutFile(ctx context.Context, rel string, size int64, open func() (io.ReadCloser, error)) (api.WriteResult, error) {
	m.once.Do(m.do)
	return m.Remote.PutFile(ctx, rel, size, open)
}

// TestConcurrentSyncDetected: a sync that ran while this one was pushing
// leaves a tree equal to neither; the later one says so and names files.
func TestConcurrentSyncDetected(t *testing.T) {
	f := newFixture(t, api.Variant1)
	other := t.TempDir()
	write(t, other, "a.com/g/hoster-game.json", `{"tickRate": 30, "sendRate": 10, "capacity": 4, "origins": ["*"]}`)
	write(t, other, "a.com/g/theirs.js", "theirs")
	write(t, f.root, "a.com/g/hoster-game.json", cfg)
	write(t, f.root, "a.com/g/mine.js", "mine")
	var otherSum SyncSummary
	m := &meddler{Remote: f.c, do: func() {
		var err error
		otherSum, err = Sync(context.Background(), other, f.c, SyncOptions{}, nil)
		if err != nil {
			t.Error(err)
		}
	}}
	sum, err := Sync(context.Background(), f.root, m, SyncOptions{Jobs: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if otherSum.Differ != 0 || len(otherSum.Failures) != 0 {
		t.Fatalf("the earlier sync saw a clean tree: %+v", otherSum)
	}
	if sum.Differ != 1 || len(sum.Failures) != 1 || sum.Failures[0].Path != "a.com/g/theirs.js" {
		t.Fatalf("the later sync did not name the difference: %+v", sum)
	}
}

// TestDeadServerEndsTheSync: once the server stops answering (connections
// cut, or a storm of 5xx), the sync stops starting transfers after a few,
// checks once more and ends, counting what it did not send; it does not try
// every file. Attempts are counted, not timed.
func TestDeadServerEndsTheSync(t *testing.T) {
	for _, mode := range []string{"hang-up", "502"} {
		t.Run(mode, func(t *testing.T) {
			games := filepath.Join(t.TempDir(), "g")
			write(t, games, "a.com/g/old.txt", "o") // a delete the dead server never gets
			var dead atomic.Bool
			var afterDeath atomic.Int64
			const attempts = 3
			c := contracttest.Start(t, contracttest.Options{GamesRoot: games, Token: token,
				Client: apiclient.ClientConfig{Attempts: attempts, RetryBase: 1},
				Wrap: func(h http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.Method == "PUT" && !dead.Swap(true) {
							h.ServeHTTP(w, r) // the first upload lands; then the server dies
							return
						}
						if !dead.Load() {
							h.ServeHTTP(w, r)
							return
						}
						afterDeath.Add(1)
						if mode == "502" {
							w.WriteHeader(http.StatusBadGateway)
							return
						}
						conn, _, _ := w.(http.Hijacker).Hijack()
						conn.Close()
					})
				}}).Client
			root := t.TempDir()
			write(t, root, "a.com/g/hoster-game.json", cfg)
			const files = 300
			for i := range files {
				write(t, root, fmt.Sprintf("a.com/g/f%03d.txt", i), "x")
			}
			const jobs = 4
			sum, err := Sync(context.Background(), root, c, SyncOptions{Jobs: jobs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// At most the transfers running when the streak was seen (a
			// success landing meanwhile restarts it once), and the one
			// check, each with its retries: not one per file.
			if n := afterDeath.Load(); n > (2*jobs+unreachableAfter+1)*attempts {
				t.Fatalf("%d requests after the server died: the sync went on trying", n)
			}
			if sum.NotSent < files-2*jobs-unreachableAfter || sum.Uploaded != 1 || sum.Deleted != 0 || !sum.DeletesSkipped {
				t.Fatalf("uploaded %d, deleted %d, not sent %d, deletes skipped %v", sum.Uploaded, sum.Deleted, sum.NotSent, sum.DeletesSkipped)
			}
		})
	}
}

// TestDeadServerCountsTheDeletesNotSent: deletes the dead server never got
// are counted as not sent, as uploads are, so the sync says so.
func TestDeadServerCountsTheDeletesNotSent(t *testing.T) {
	games := filepath.Join(t.TempDir(), "g")
	const files = 200
	for i := range files {
		write(t, games, fmt.Sprintf("a.com/g/old%03d.txt", i), "o")
	}
	write(t, games, "a.com/g/hoster-game.json", cfg)
	var dead atomic.Bool
	c := contracttest.Start(t, contracttest.Options{GamesRoot: games, Token: token,
		Client: apiclient.ClientConfig{Attempts: 2, RetryBase: 1},
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == "DELETE" {
					dead.Store(true)
				}
				if dead.Load() {
					w.WriteHeader(http.StatusBadGateway)
					return
				}
				h.ServeHTTP(w, r)
			})
		}}).Client
	root := t.TempDir()
	write(t, root, "a.com/g/hoster-game.json", cfg)
	const jobs = 4
	sum, err := Sync(context.Background(), root, c, SyncOptions{Jobs: jobs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.NotSent < files-2*jobs-unreachableAfter || sum.Deleted != 0 {
		t.Fatalf("deleted %d, not sent %d of %d deletes", sum.Deleted, sum.NotSent, files)
	}
}
