package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/transfer"
)

// fakeRemote is a transport that logs every upload's start and end, fails
// chosen paths and holds chosen ones until a condition on the log holds.
type fakeRemote struct {
	mu       sync.Mutex
	cond     *sync.Cond
	log      []string // "start <path>", "done <path>"
	inFlight int
	maxIn    int
	fail     func(path string) bool
	// hold, when set, keeps an upload of path waiting until it returns false.
	hold    func(path string, log []string) bool
	batch   bool
	batches int
	tree    api.Tree // what it holds, as a server would: the sync reads it back
	// treeInBatch answers a batch that asks for the tree with it, as
	// hoster-server does; treesInBatches and treeReads count them.
	treeInBatch               bool
	treesInBatches, treeReads int
	editedMeanwhile           api.Tree // files the tree in a batch's answer shows besides
	// reportHash, when set, is the hash a batch answer reports for a file
	// written with the given one; nil reports none, as an older server.
	reportHash func(path, written string) string
}

func newFakeRemote() *fakeRemote {
	r := &fakeRemote{tree: api.Tree{}, reportHash: func(_, h string) string { return h }}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *fakeRemote) Tree(context.Context) (api.Tree, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.treeReads++
	return maps.Clone(r.tree), nil
}

// CanBatch offers the batch upload when batch is set; PutFiles then takes
// the files of a batch one after the other, as the server does.
func (r *fakeRemote) CanBatch() bool { return r.batch }
func (r *fakeRemote) PutFiles(ctx context.Context, files []transfer.BatchFile, tree bool) ([]transfer.BatchOutcome, api.Tree, error) {
	r.mu.Lock()
	r.batches++
	r.mu.Unlock()
	outs := make([]transfer.BatchOutcome, len(files))
	for i, f := range files {
		_, outs[i].Err = r.PutFile(ctx, f.Rel, f.Size, f.Open)
		r.mu.Lock()
		if outs[i].Err == nil && r.reportHash != nil {
			outs[i].SHA256 = r.reportHash(f.Rel, r.tree[f.Rel])
		}
		r.mu.Unlock()
	}
	if !tree || !r.treeInBatch {
		return outs, nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.treesInBatches++
	t := maps.Clone(r.tree)
	maps.Copy(t, r.editedMeanwhile)
	return outs, t, nil
}
func (r *fakeRemote) DeleteFile(_ context.Context, rel string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.tree, rel)
	return nil
}

func (r *fakeRemote) PutFile(ctx context.Context, rel string, size int64, open func() (io.ReadCloser, error)) (api.WriteResult, error) {
	r.mu.Lock()
	r.log = append(r.log, "start "+rel)
	r.inFlight++
	r.maxIn = max(r.maxIn, r.inFlight)
	r.cond.Broadcast()
	for r.hold != nil && r.hold(rel, r.log) {
		r.cond.Wait()
	}
	r.inFlight--
	r.log = append(r.log, "done "+rel)
	r.cond.Broadcast()
	r.mu.Unlock()
	if r.fail != nil && r.fail(rel) {
		return api.WriteResult{}, errors.New("disk on fire")
	}
	f, err := open()
	if err != nil {
		return api.WriteResult{}, err
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	r.mu.Lock()
	r.tree[rel] = hex.EncodeToString(h.Sum(nil))
	r.mu.Unlock()
	return api.WriteResult{Size: size}, nil
}

func has(log []string, e string) bool { return slices.Contains(log, e) }

// codeGame writes a game with code files and n other files.
func codeGame(t *testing.T, root, g string, n int) {
	write(t, root, g+"/hoster-game.json", cfg)
	write(t, root, g+"/hoster.server.js", "module")
	for i := 0; i < n; i++ {
		write(t, root, fmt.Sprintf("%s/f%d.txt", g, i), strings.Repeat("x", i+1))
	}
	// Over batchFileMax: it always goes alone, so holding it never holds
	// the files batched with it.
	write(t, root, g+"/big.bin", strings.Repeat("b", 2<<20))
}

func isCode(p string) bool { return lastInGame(p) }

// A game's code files start only after every other upload of the sync has
// landed, even when one of those is slow.
func TestCodeFilesGoLast(t *testing.T) { codeGamesBothWays(t, testCodeFilesGoLast) }

// codeGamesBothWays runs test against a remote that offers the batch
// upload and one that does not, each time on a new root holding the code
// games a.com/g (10 other files) and b.com/h (3).
func codeGamesBothWays(t *testing.T, test func(t *testing.T, root string, r *fakeRemote)) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			root := t.TempDir()
			codeGame(t, root, "a.com/g", 10)
			codeGame(t, root, "b.com/h", 3)
			r := newFakeRemote()
			r.batch = batch
			test(t, root, r)
		})
	}
}

func testCodeFilesGoLast(t *testing.T, root string, r *fakeRemote) {
	// big.bin of a.com/g is held until its game's code has started (which a
	// wrong order does at once) or every other upload of the game is done.
	r.hold = func(p string, log []string) bool {
		if p != "a.com/g/big.bin" {
			return false
		}
		if has(log, "start a.com/g/hoster.server.js") || has(log, "start a.com/g/hoster-game.json") {
			return false
		}
		for i := 0; i < 10; i++ {
			if !has(log, fmt.Sprintf("done a.com/g/f%d.txt", i)) {
				return true
			}
		}
		return false
	}
	sum, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 8}, nil)
	if err != nil || len(sum.Failures) > 0 || sum.Uploaded != 19 {
		t.Fatalf("sync %+v, %v", sum, err)
	}
	checkCodeAfterRest(t, r.log)
	if r.batch != (r.batches > 0) {
		t.Errorf("%d batches with batch=%v", r.batches, r.batch)
	}
	if r.maxIn > 8 {
		t.Errorf("%d uploads in flight, more than --jobs 8", r.maxIn)
	}
}

// checkCodeAfterRest checks that no code file started before every other
// file of the sync was done.
func checkCodeAfterRest(t *testing.T, log []string) {
	t.Helper()
	for i, e := range log {
		p, ok := strings.CutPrefix(e, "start ")
		if !ok || !isCode(p) {
			continue
		}
		for _, later := range log[i:] {
			q, ok := strings.CutPrefix(later, "done ")
			if ok && !isCode(q) {
				t.Errorf("%s started before %s was done:\n%s", p, q, strings.Join(log, "\n"))
			}
		}
	}
}

// When an upload of a game fails, its code files are not uploaded at all
// (each reported as held back); other games are pushed whole.
func TestCodeFilesHeldAfterAFailure(t *testing.T) {
	codeGamesBothWays(t, testCodeFilesHeldAfterAFailure)
}

func testCodeFilesHeldAfterAFailure(t *testing.T, root string, r *fakeRemote) {
	r.fail = func(p string) bool { return p == "a.com/g/f3.txt" }
	sum, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.com/g/hoster-game.json", "a.com/g/hoster.server.js"} {
		if has(r.log, "start "+p) {
			t.Errorf("%s was uploaded after a failure in its game", p)
		}
	}
	for _, p := range []string{"b.com/h/hoster-game.json", "b.com/h/hoster.server.js"} {
		if !has(r.log, "done "+p) {
			t.Errorf("%s of the good game was not uploaded", p)
		}
	}
	var failed []string
	for _, f := range sum.Failures {
		failed = append(failed, f.Path)
		if f.Path != "a.com/g/f3.txt" && !strings.Contains(f.Error, "held back") {
			t.Errorf("failure %+v", f)
		}
	}
	slices.Sort(failed)
	if want := []string{"a.com/g/f3.txt", "a.com/g/hoster-game.json", "a.com/g/hoster.server.js"}; !slices.Equal(failed, want) {
		t.Errorf("failures %v, want %v", failed, want)
	}
	checkCodeAfterRest(t, r.log)
}

// With two workers, one takes the biggest file and the other the smallest:
// small files never wait behind big ones.
func TestUploadsBigAndSmallAtOnce(t *testing.T) {
	var ups []Upload
	for i := 1; i <= 6; i++ {
		ups = append(ups, Upload{Path: fmt.Sprintf("a.com/g/f%d", i), Size: int64(i * 1000)})
	}
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var started []string
	runUploads(context.Background(), ups, 2, func(u Upload) error {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, u.Path)
		cond.Broadcast()
		for len(started) < 2 { // both workers hold their first file
			cond.Wait()
		}
		return nil
	}, nil, func(Upload, error) {})
	first := slices.Sorted(slices.Values(started[:2]))
	if want := []string{"a.com/g/f1", "a.com/g/f6"}; !slices.Equal(first, want) {
		t.Fatalf("first two uploads %v, want the smallest and the biggest", first)
	}
}

// With a HashCache (sync --watch), an unchanged file is not hashed again,
// and a file rewritten with its size and mtime restored is still seen as
// changed (its ctime moved).
func TestHashCacheAcrossRounds(t *testing.T) {
	f := newFixture(t, api.Variant1)
	writeFiles(t, f.root, "a.com/g/hoster-game.json", cfg, "a.com/g/a.txt", "aaaa", "a.com/g/b.txt", "bbbb")
	cache := NewHashCache()
	if _, err := f.sync(t, SyncOptions{Hashes: cache}); err != nil {
		t.Fatal(err)
	}
	// The first round hashed nothing (the server had nothing to compare
	// with); the second hashes all three and keeps them; the third reads none.
	f.sync(t, SyncOptions{Hashes: cache})
	before := cache.Hits()
	sum, err := f.sync(t, SyncOptions{Hashes: cache})
	if err != nil || sum.Unchanged != 3 || cache.Hits()-before != 3 {
		t.Fatalf("third round: %+v, %v, %d cache hits", sum, err, cache.Hits()-before)
	}
	p := filepath.Join(f.root, "a.com/g/a.txt")
	fi, _ := os.Stat(p)
	os.WriteFile(p, []byte("AAAA"), 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	sum, err = f.sync(t, SyncOptions{Hashes: cache})
	if err != nil || sum.Uploaded != 1 || sum.Plan.Uploads[0].Path != "a.com/g/a.txt" {
		t.Fatalf("after a rewrite with size and mtime restored: %+v, %v", sum, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.games, "a.com/g/a.txt")); string(b) != "AAAA" {
		t.Fatalf("server has %q", b)
	}
}

func TestInFlightFollowsTheLink(t *testing.T) {
	for _, c := range []struct {
		rtt     time.Duration
		ceiling int
		want    int
	}{
		{0, 64, 8}, {200 * time.Microsecond, 64, 8}, {20 * time.Millisecond, 64, 48},
		{50 * time.Millisecond, 64, 64}, {50 * time.Millisecond, 256, 108}, {0, 4, 4}, {0, 0, 1},
	} {
		if got := InFlight(c.rtt, c.ceiling); got != c.want {
			t.Errorf("InFlight(%v, %d) = %d, want %d", c.rtt, c.ceiling, got, c.want)
		}
	}
}

// linkRemote is a fakeRemote that reports a round trip and records Warm.
type linkRemote struct {
	*fakeRemote
	rtt    time.Duration
	warmMu sync.Mutex
	warmed int
}

func (l *linkRemote) RTT() time.Duration { return l.rtt }
func (l *linkRemote) Warm(_ context.Context, n int) {
	l.warmMu.Lock()
	l.warmed = max(l.warmed, n)
	l.warmMu.Unlock()
}

// Against a Link, connections are warmed for the uploads ahead, and no more
// transfers run at once than the link's round trip calls for.
func TestSyncWarmsAndFollowsTheLink(t *testing.T) {
	root := t.TempDir()
	codeGame(t, root, "a.com/g", 30)
	r := &linkRemote{fakeRemote: newFakeRemote(), rtt: 2 * time.Millisecond} // InFlight: 12
	// Every upload waits until 12 are in flight or none is left to start.
	r.hold = func(p string, log []string) bool {
		started := 0
		for _, e := range log {
			if strings.HasPrefix(e, "start ") {
				started++
			}
		}
		return r.inFlight < 12 && started < 30
	}
	sum, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 64}, nil)
	if err != nil || sum.Uploaded != 33 {
		t.Fatalf("%+v, %v", sum, err)
	}
	if r.maxIn != 12 {
		t.Errorf("%d uploads were in flight at most, want 12", r.maxIn)
	}
	r.warmMu.Lock()
	defer r.warmMu.Unlock()
	if r.warmed != 12 {
		t.Errorf("%d connections warmed, want 12", r.warmed)
	}
}

// Where batches report the hash of what the server wrote, the check after
// the sync compares the tree with those hashes (nothing sent is hashed
// here); a server that reports none has the files hashed here instead.
func TestCheckUsesTheHashesTheServerReports(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(path, written string) string
		differ []string
	}{
		{"reported", func(_, h string) string { return h }, nil},
		{"one reported wrong", func(p, h string) string {
			if p == "a.com/g/f2.txt" {
				return strings.Repeat("0", 64)
			}
			return h
		}, []string{"a.com/g/f2.txt"}},
		{"none reported", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			codeGame(t, root, "a.com/g", 5)
			r := newFakeRemote()
			r.batch, r.reportHash = true, tc.report
			sum, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 4}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range sum.Failures {
				got = append(got, f.Path)
			}
			if sum.Differ != len(tc.differ) || !slices.Equal(got, tc.differ) {
				t.Errorf("differ %d, failures %+v; want %v", sum.Differ, sum.Failures, tc.differ)
			}
		})
	}
}

// A failed Check (the server's version) ends the sync before anything is
// sent, with the check's own error.
func TestFailedCheckSendsNothing(t *testing.T) {
	root := t.TempDir()
	codeGame(t, root, "a.com/g", 3)
	r := newFakeRemote()
	refused := errors.New("the server speaks API 9")
	_, err := Sync(context.Background(), root, r, SyncOptions{Check: func() error { return refused }}, nil)
	if err != refused {
		t.Fatalf("sync returned %v, want the check's error", err)
	}
	if len(r.log) > 0 {
		t.Errorf("sent after a failed check: %v", r.log)
	}
}

// With batches, connections are opened ahead for the requests the uploads
// take, not for each file: a code game of 30 small files and one big one is
// two requests, then its code files (on a connection that is free again).
func TestWarmCountsRequestsNotFiles(t *testing.T) {
	root := t.TempDir()
	codeGame(t, root, "a.com/g", 30)
	r := &linkRemote{fakeRemote: newFakeRemote(), rtt: 2 * time.Millisecond}
	r.batch = true
	sum, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 64}, nil)
	if err != nil || sum.Uploaded != 33 {
		t.Fatalf("%+v, %v", sum, err)
	}
	r.warmMu.Lock()
	defer r.warmMu.Unlock()
	if r.warmed != 2 {
		t.Errorf("%d connections warmed, want 2", r.warmed)
	}
	for _, c := range []struct {
		sizes []int64
		batch bool
		want  int
	}{
		{[]int64{1, 2, 3}, false, 3},
		{[]int64{1, 2, 3}, true, 1},
		{[]int64{batchFileMax + 1, 1, 2}, true, 2},
		{make([]int64, batchFiles+1), true, 2},
		{[]int64{batchFileMax, batchFileMax, batchFileMax, batchFileMax, 1}, true, 2},
		{nil, true, 0},
	} {
		if got := uploadRequests(c.sizes, c.batch); got != c.want {
			t.Errorf("uploadRequests(%d sizes, batch %v) = %d, want %d", len(c.sizes), c.batch, got, c.want)
		}
	}
}

// Connections are opened ahead at the start, as many as the local tree's
// uploads would take, up to earlyWarm (here two: the small files in one
// batch, big.bin in another); a sync that sends nothing opens no more, a
// dry run none.
func TestWarmAheadAtTheStart(t *testing.T) {
	root := t.TempDir()
	codeGame(t, root, "a.com/g", 3)
	r := &linkRemote{fakeRemote: newFakeRemote(), rtt: 2 * time.Millisecond}
	r.batch = true
	if _, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 64, DryRun: true}, nil); err != nil || r.warmed != 0 {
		t.Fatalf("a dry run warmed %d connections (%v)", r.warmed, err)
	}
	if _, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 64}, nil); err != nil {
		t.Fatal(err)
	}
	noop := &linkRemote{fakeRemote: r.fakeRemote, rtt: 2 * time.Millisecond}
	if sum, err := Sync(context.Background(), root, noop, SyncOptions{Jobs: 64}, nil); err != nil || sum.Uploaded != 0 || noop.warmed != 2 {
		t.Fatalf("a no-op warmed %d connections: %+v, %v", noop.warmed, sum, err)
	}
}

// Where the server answers a batch with its tree, the code files of every
// game go last, together, in one batch that brings the tree back for the
// check: no request of its own after the uploads. With deletes still to
// run after the uploads, or against a server that sends no tree, the check
// reads the tree itself.
func TestCheckComesBackWithTheLastBatch(t *testing.T) {
	for _, c := range []struct {
		name                 string
		treeInBatch, deletes bool
		editedMeanwhile      api.Tree
		batchTrees, reads    int
		differ               int
	}{
		{name: "the tree in the last batch", treeInBatch: true, batchTrees: 1, reads: 1},
		{name: "an edit it shows", treeInBatch: true, editedMeanwhile: api.Tree{"a.com/g/stray.txt": "00"}, batchTrees: 1, reads: 1, differ: 1},
		{name: "deletes after the uploads", treeInBatch: true, deletes: true, reads: 2},
		{name: "a server that sends none", reads: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			codeGame(t, root, "a.com/g", 10)
			codeGame(t, root, "b.com/h", 3)
			r := newFakeRemote()
			r.batch, r.treeInBatch, r.editedMeanwhile = true, c.treeInBatch, c.editedMeanwhile
			if c.deletes {
				r.tree["a.com/g/old.txt"] = "00"
			}
			sum, err := Sync(context.Background(), root, r, SyncOptions{Jobs: 8}, nil)
			if err != nil || sum.Uploaded != 19 || len(sum.Failures) != c.differ || sum.Differ != c.differ {
				t.Fatalf("sync %+v, %v", sum, err)
			}
			if r.treesInBatches != c.batchTrees || r.treeReads != c.reads {
				t.Errorf("%d trees brought by batches and %d read, want %d and %d", r.treesInBatches, r.treeReads, c.batchTrees, c.reads)
			}
			checkCodeAfterRest(t, r.log)
		})
	}
}
