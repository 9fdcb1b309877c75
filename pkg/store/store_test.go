package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/hoster-dev/hoster/internal/quiettest"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"github.com/hoster-dev/hoster/pkg/filehash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// traversal holds every kind of path the store must refuse, for writes and
// deletes alike; it seeds the fuzz target too.
var traversal = []string{
	"", "/", "/etc/passwd", "../x/y/z", "a/../../b/c", "a/b/../../../c", "a/b/..", "..",
	"a/./b/c", "./a/b/c", "a//b/c", "a/b/c/", "a\\b\\c", "a/b\\..\\..\\c", "a/b/c\x00",
	"a\x00/b/c", ".", "a/b/.", "//a/b/c", "a/b/bad\xff.txt", "a/b\xfe/c", "a/b/\xed\xa0\x80",
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func newStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "games")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func TestCleanPath(t *testing.T) {
	for _, p := range traversal {
		if _, err := CleanPath(p); err == nil {
			t.Errorf("CleanPath(%q) accepted", p)
		}
	}
	for _, p := range []string{"a", "example.com/arena/x.js", "a/b/c d/é.txt", "a/.b/c"} {
		if _, err := CleanPath(p); err != nil {
			t.Errorf("CleanPath(%q) = %v", p, err)
		}
	}
}

func TestDepthRules(t *testing.T) {
	s, dir := newStore(t)
	for _, p := range []string{"a", "a/b", "example.com/arena"} {
		if _, err := s.Write(p, strings.NewReader("x"), 0); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Write(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := s.Write("a/b/.x.tmp-123", strings.NewReader("x"), 0); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("a client must not address the store's temporary files: %v", err)
	}
	os.MkdirAll(filepath.Join(dir, "example.com", "arena"), 0o755)
	for _, p := range []string{"example.com", "", "."} {
		if err := s.Delete(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "example.com", "arena")); err != nil {
		t.Fatal("a refused delete removed something")
	}
}

// The deepest path a client may write is listed by the tree; one segment
// more is refused.
func TestMaxDepth(t *testing.T) {
	s, _ := newStore(t)
	deepest := "example.com/arena/" + strings.Repeat("d/", MaxDepth-3) + "f"
	if _, err := s.Write(deepest, strings.NewReader("deep"), 0); err != nil {
		t.Fatalf("writing %d segments: %v", MaxDepth, err)
	}
	if _, err := s.Write("x/"+deepest, strings.NewReader("deep"), 0); !errors.Is(err, ErrInvalidPath) {
		t.Fatalf("writing %d segments = %v, want ErrInvalidPath", MaxDepth+1, err)
	}
	tree, err := s.Tree()
	if err != nil || tree[deepest] != sha([]byte("deep")) || len(tree) != 1 {
		t.Fatalf("tree = %v, %v", tree, err)
	}
}

func TestWriteDeleteTree(t *testing.T) {
	s, dir := newStore(t)
	files := map[string]string{
		"example.com/arena/hoster-game.json": `{"tickRate":20}`,
		"example.com/arena/a/b/c.js":         "deep",
		"example.org/g/empty":                "",
	}
	written := map[string]string{}
	for p, body := range files {
		w, err := s.Write(p, strings.NewReader(body), 0)
		if err != nil || w.Size != int64(len(body)) {
			t.Fatalf("Write(%q) = %+v, %v", p, w, err)
		}
		written[p] = w.SHA256
	}
	tree, err := s.Tree()
	if err != nil {
		t.Fatal(err)
	}
	for p, h := range written {
		if tree[p] != h {
			t.Errorf("Write(%q) said sha256 %s, the tree says %s", p, h, tree[p])
		}
	}
	if len(tree) != len(files) {
		t.Fatalf("tree has %d entries, want %d: %v", len(tree), len(files), tree)
	}
	for p, body := range files {
		if tree[p] != sha([]byte(body)) {
			t.Errorf("tree[%q] = %q, want sha of %q", p, tree[p], body)
		}
	}
	// Overwrite.
	s.Write("example.com/arena/a/b/c.js", strings.NewReader("new"), 0)
	tree, _ = s.Tree()
	if tree["example.com/arena/a/b/c.js"] != sha([]byte("new")) {
		t.Error("overwrite not reflected in the tree")
	}
	// Subtree delete, then idempotent delete.
	for i := 0; i < 2; i++ {
		if err := s.Delete("example.com/arena/a"); err != nil {
			t.Fatalf("Delete #%d: %v", i, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "example.com/arena/a")); !os.IsNotExist(err) {
		t.Fatal("subtree not deleted")
	}
	if err := s.Delete("example.org/g"); err != nil {
		t.Fatal(err)
	}
	tree, _ = s.Tree()
	if len(tree) != 1 {
		t.Fatalf("tree after deletes: %v", tree)
	}
	// Writing over a directory fails and changes nothing.
	if _, err := s.Write("example.com/arena", strings.NewReader("x"), 0); err == nil {
		t.Fatal("wrote over a game directory")
	}
}

// failingReader gives some bytes, then fails, like a connection cut mid-body.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

func TestCutOrOversizedUploadKeepsOldFile(t *testing.T) {
	s, dir := newStore(t)
	const p = "example.com/arena/big.bin"
	if _, err := s.Write(p, strings.NewReader("old"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(p, &failingReader{n: 100000}, 0); err == nil {
		t.Fatal("a cut upload succeeded")
	}
	if _, err := s.Write(p, strings.NewReader(strings.Repeat("y", 11)), 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized upload: %v", err)
	}
	if w, err := s.Write("example.com/arena/exact.bin", strings.NewReader(strings.Repeat("y", 10)), 10); err != nil || w.Size != 10 {
		t.Fatalf("an upload of exactly the limit must pass: %+v, %v", w, err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, p))
	if string(got) != "old" {
		t.Fatalf("old file became %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "example.com/arena"))
	for _, e := range entries {
		if isTemporary(e.Name()) {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestWriteWantKeepsOldFileForAnotherBody: a body that is not the sha256
// it was written for is never renamed into place, and leaves no temporary.
func TestWriteWantKeepsOldFileForAnotherBody(t *testing.T) {
	s, dir := newStore(t)
	const p = "example.com/arena/body.bin"
	if _, err := s.Write(p, strings.NewReader("old"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteWant(p, strings.NewReader("forged"), sha([]byte("new"))); !errors.Is(err, ErrNotWanted) {
		t.Fatalf("a body of another sha256: %v, want ErrNotWanted", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, p)); string(got) != "old" {
		t.Fatalf("the old file became %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "example.com/arena"))
	for _, e := range entries {
		if isTemporary(e.Name()) {
			t.Fatalf("temporary file left behind: %s", e.Name())
		}
	}
	w, err := s.WriteWant(p, strings.NewReader("new"), sha([]byte("new")))
	if err != nil || w.SHA256 != sha([]byte("new")) || w.Size != 3 {
		t.Fatalf("the wanted body: %+v, %v", w, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, p)); string(got) != "new" {
		t.Fatalf("the file is %q, want the new body", got)
	}
}

func TestSymlinksNeverLeadOutside(t *testing.T) {
	s, dir := newStore(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("keep"), 0o644)
	game := filepath.Join(dir, "example.com", "arena")
	os.MkdirAll(game, 0o755)
	// A directory link and a file link planted in the tree, pointing out.
	if err := os.Symlink(outside, filepath.Join(game, "out")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(secret, filepath.Join(game, "secret-link"))
	os.Symlink(outside, filepath.Join(dir, "evil.com"))

	for _, p := range []string{"example.com/arena/out/secret", "example.com/arena/out/new", "evil.com/x/y", "example.com/arena/out/sub/new"} {
		if _, err := s.Write(p, strings.NewReader("pwned"), 0); err == nil {
			t.Errorf("Write(%q) through a symlink succeeded", p)
		}
	}
	// A file link is not written over: not through, not in its place.
	if _, err := s.Write("example.com/arena/secret-link", strings.NewReader("pwned"), 0); !errors.Is(err, atomicfile.ErrNotRegular) {
		t.Errorf("Write over a symlink: %v, want ErrNotRegular", err)
	}
	if fi, err := os.Lstat(filepath.Join(game, "secret-link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v", err)
	}
	for _, p := range []string{"example.com/arena/out/secret", "evil.com/x"} {
		s.Delete(p)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "keep" {
		t.Fatalf("the file outside was touched: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("something was created outside: %d entries", len(entries))
	}
	// The tree does not follow links out.
	tree, err := s.Tree()
	if err != nil {
		t.Fatal(err)
	}
	for p := range tree {
		if strings.Contains(p, "out") || strings.Contains(p, "secret") || strings.HasPrefix(p, "evil.com") {
			t.Errorf("tree followed a symlink: %s", p)
		}
	}
	// Deleting the link removes the link, not what it points at.
	if err := s.Delete("example.com/arena/out"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatal("deleting a symlink removed its target")
	}
	// A game folder that is itself a link out is removed as a link.
	if err := s.Delete("evil.com/x"); err == nil {
		if _, err := os.Stat(secret); err != nil {
			t.Fatal("deleting through a symlinked domain reached outside")
		}
	}
}

// The cache must give exactly what hashing the disk afresh gives, even for a
// rewrite that keeps the size and restores the mtime.
func TestTreeCacheValidatedByCtime(t *testing.T) {
	s, dir := newStore(t)
	const p = "example.com/arena/f.txt"
	full := filepath.Join(dir, p)
	s.Write(p, strings.NewReader("aaaa"), 0)
	fi, _ := os.Stat(full)
	mtime := fi.ModTime()
	if tree, _ := s.Tree(); tree[p] != sha([]byte("aaaa")) {
		t.Fatal("first hash wrong")
	}
	// Rewrite until the file's ctime has moved (the kernel's clock ticks
	// coarsely): only ctime then tells the versions apart.
	first, _ := filehash.StampOf(fi)
	var fi2 os.FileInfo
	for now := first; now.Ctime == first.Ctime; now, _ = filehash.StampOf(fi2) {
		if err := os.WriteFile(full, []byte("bbbb"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		fi2, _ = os.Stat(full)
	}
	if fi2.Size() != fi.Size() || !fi2.ModTime().Equal(mtime) {
		t.Fatal("test set-up: size and mtime must match the first version")
	}
	if tree, _ := s.Tree(); tree[p] != sha([]byte("bbbb")) {
		t.Fatalf("a rewrite with the same size and mtime served the stale hash")
	}
	// Unchanged: the cached hash is served (and is still right).
	if tree, _ := s.Tree(); tree[p] != sha([]byte("bbbb")) {
		t.Fatal("cached hash wrong")
	}
	// Replaced by rename (new inode), same size.
	os.WriteFile(full+".new", []byte("cccc"), 0o644)
	os.Rename(full+".new", full)
	os.Chtimes(full, mtime, mtime)
	if tree, _ := s.Tree(); tree[p] != sha([]byte("cccc")) {
		t.Fatal("a replaced file served the stale hash")
	}
}

func TestConcurrentUploads(t *testing.T) {
	s, _ := newStore(t)
	want := map[string]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 64; i++ {
		body := bytes.Repeat([]byte{byte(i)}, 1000+i*997)
		p := fmt.Sprintf("d%d.com/g%d/file%d.bin", i%4, i%5, i)
		want[p] = sha(body)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Write(p, bytes.NewReader(body), 0); err != nil {
				mu.Lock()
				t.Errorf("Write(%s): %v", p, err)
				mu.Unlock()
			}
		}()
	}
	// The same file written by many at once ends as one of the bodies, whole.
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Write("same.com/g/x", bytes.NewReader(bytes.Repeat([]byte("z"), 50000)), 0)
		}()
	}
	wg.Wait()
	want["same.com/g/x"] = sha(bytes.Repeat([]byte("z"), 50000))
	tree, err := s.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != len(want) {
		t.Fatalf("tree has %d files, want %d", len(tree), len(want))
	}
	for p, h := range want {
		if tree[p] != h {
			t.Errorf("%s: hash %s, want %s", p, tree[p], h)
		}
	}
}

// A write caches the hash of what it wrote, so the next tree request does
// not read the file; racing writers of different bodies to one path must
// leave a tree that matches the bytes on disk, whichever won.
func TestWriteCachesItsHash(t *testing.T) {
	s, dir := newStore(t)
	const p = "example.com/arena/f.bin"
	s.Write(p, strings.NewReader("hello"), 0)
	s.mu.Lock()
	c, ok := s.cache[p]
	s.mu.Unlock()
	fi, _ := os.Lstat(filepath.Join(dir, p))
	st, _ := filehash.StampOf(fi)
	if !ok || c.hash != sha([]byte("hello")) || c.stamp != st {
		t.Fatalf("cache after a write = %+v (present %v), want the stamp %+v of the renamed file", c, ok, st)
	}

	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Write(p, bytes.NewReader(bytes.Repeat([]byte{byte('a' + i)}, 4096)), 0)
			}()
		}
		wg.Wait()
		onDisk, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if tree, _ := s.Tree(); tree[p] != sha(onDisk) {
			t.Fatalf("round %d: tree says %s, the file on disk hashes to %s", round, tree[p], sha(onDisk))
		}
	}
}

// manualAfter times a Debouncer's quiet periods with clock's timers.
func manualAfter(clock *quiettest.Timers) AfterFunc {
	return func(d time.Duration, f func()) QuietTimer { return clock.After(d, f) }
}

func TestDebouncerBurst(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	d := NewDebouncer(time.Hour, func(domain, game string) {
		mu.Lock()
		got[domain+"/"+game]++
		mu.Unlock()
	})
	clock := &quiettest.Timers{}
	d.after = manualAfter(clock)
	defer d.Close()
	games := [][2]string{{"a.com", "x"}, {"a.com", "y"}, {"b.com", "x"}}
	var wg sync.WaitGroup
	for i := 0; i < 500; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); g := games[i%3]; d.Mark(g[0], g[1]) }()
	}
	wg.Wait()
	// One quiet period, restarted by every mark after the first.
	if clock.Armed() != 1 || clock.Resets() != 499 {
		t.Fatalf("%d timers, %d restarts; want 1 timer restarted 499 times", clock.Armed(), clock.Resets())
	}
	mu.Lock()
	if len(got) != 0 {
		t.Fatalf("reloads %v inside the quiet period", got)
	}
	mu.Unlock()
	clock.Fire(0)
	mu.Lock()
	if len(got) != 3 || got["a.com/x"] != 1 || got["a.com/y"] != 1 || got["b.com/x"] != 1 {
		t.Fatalf("reloads %v, want exactly one for each of 3 games", got)
	}
	mu.Unlock()
	// The next change starts a new quiet period.
	d.Mark("a.com", "x")
	if clock.Armed() != 2 {
		t.Fatalf("%d timers after a change past the quiet period, want 2", clock.Armed())
	}
}

// TestDebouncerBatchHolds: a game changed by a batch under way is not
// reloaded when a quiet period ends inside the batch (its body stalled),
// while other games are; the batch's end starts its quiet period afresh and
// it reloads once; a game two batches changed waits for both.
func TestDebouncerBatchHolds(t *testing.T) {
	var got []string
	d := NewDebouncer(time.Hour, func(domain, game string) { got = append(got, domain+"/"+game) })
	clock := &quiettest.Timers{}
	d.WithTimers(manualAfter(clock))
	defer d.Close()
	b1, b2 := d.Batch(), d.Batch()
	b1.Mark("a.com", "x")
	b1.Mark("a.com", "y")
	b2.Mark("a.com", "y")
	d.Mark("b.com", "z") // a single upload beside the batches
	clock.Fire(0)        // the batches stall past the quiet period
	if fmt.Sprint(got) != "[b.com/z]" {
		t.Fatalf("reloads %v during the batches, want only b.com/z", got)
	}
	b1.Mark("a.com", "x") // the stalled file lands
	b1.Release()
	if clock.Armed() != 2 {
		t.Fatalf("%d quiet periods, want a second one from the batch's end", clock.Armed())
	}
	clock.Fire(1)
	if fmt.Sprint(got) != "[b.com/z a.com/x]" {
		t.Fatalf("reloads %v after the first batch, want a.com/x once more (a.com/y is still held)", got)
	}
	b2.Release()
	clock.Fire(2)
	if fmt.Sprint(got) != "[b.com/z a.com/x a.com/y]" {
		t.Fatalf("reloads %v after both batches, want a.com/y once", got)
	}
}

func TestDebouncerCloseFlushes(t *testing.T) {
	fired := 0
	d := NewDebouncer(time.Hour, func(string, string) { fired++ })
	d.Mark("a.com", "x")
	d.Close()
	if fired != 1 {
		t.Fatalf("Close fired %d reloads, want the pending one", fired)
	}
	d.Mark("a.com", "x") // after Close: ignored, no panic
}

func FuzzCleanPath(f *testing.F) {
	for _, p := range traversal {
		f.Add(p)
	}
	f.Add("example.com/arena/x.js")
	f.Fuzz(func(t *testing.T, p string) {
		segs, err := CleanPath(p)
		if err != nil {
			return
		}
		// An accepted path stays inside the root whatever joins it.
		clean := filepath.Clean("/root/" + p)
		if !strings.HasPrefix(clean, "/root/") || clean == "/root" {
			t.Fatalf("accepted %q escapes: %s", p, clean)
		}
		if strings.Join(segs, "/") != p || filepath.ToSlash(filepath.Clean(p)) != p {
			t.Fatalf("accepted %q is not canonical", p)
		}
	})
}

// Uploads go through open handles on their folders; a folder removed behind
// the store's back, deleted through it, or pushed out of the handle cache
// must never swallow a write.
func TestFolderHandles(t *testing.T) {
	s, dir := newStore(t)
	const p = "example.com/arena/sub/f.txt"
	if _, err := s.Write(p, strings.NewReader("one"), 0); err != nil {
		t.Fatal(err)
	}
	// Removed by hand: the next write lands in a new folder, on disk.
	if err := os.RemoveAll(filepath.Join(dir, "example.com/arena/sub")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(p, strings.NewReader("two"), 0); err != nil {
		t.Fatalf("writing after the folder was removed by hand: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != "two" {
		t.Fatalf("on disk: %q, %v", b, err)
	}
	// Deleted through the store, then written again.
	if err := s.Delete("example.com/arena"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(p, strings.NewReader("three"), 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != "three" {
		t.Fatalf("after delete and write: %q", b)
	}
	// More folders than handles kept: every file is where it belongs.
	want := map[string]string{p: sha([]byte("three"))}
	for i := 0; i < maxDirs+50; i++ {
		q := fmt.Sprintf("example.com/arena/d%d/f", i)
		if _, err := s.Write(q, strings.NewReader(q), 0); err != nil {
			t.Fatal(err)
		}
		want[q] = sha([]byte(q))
	}
	tree, err := s.Tree()
	if err != nil || !reflect.DeepEqual(tree, want) {
		t.Fatalf("tree after %d folders: %d entries, %v", maxDirs+50, len(tree), err)
	}
	if len(s.dirs.entries) > maxDirs {
		t.Fatalf("%d folder handles kept, more than %d", len(s.dirs.entries), maxDirs)
	}
}

// A folder removed between an upload's create and its rename fails that
// upload (the client retries it) instead of losing it silently.
func TestFolderRemovedMidUpload(t *testing.T) {
	s, dir := newStore(t)
	const p = "example.com/arena/sub/f.txt"
	s.Write(p, strings.NewReader("one"), 0)
	body := &hookReader{data: []byte("two"), after: func() { os.RemoveAll(filepath.Join(dir, "example.com/arena/sub")) }}
	if _, err := s.Write(p, body, 0); err == nil {
		t.Fatal("an upload into a folder removed mid-way reported success")
	}
	if _, err := s.Write(p, strings.NewReader("three"), 0); err != nil {
		t.Fatalf("the next upload: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != "three" {
		t.Fatalf("on disk: %q", b)
	}
}

// hookReader yields data, then runs after once before reporting EOF.
type hookReader struct {
	data  []byte
	after func()
}

func (r *hookReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	if r.after != nil {
		r.after()
		r.after = nil
	}
	return 0, io.EOF
}

// Every handle taken by an upload is given back, whichever way it ends.
func TestFolderHandlesReleased(t *testing.T) {
	s, dir := newStore(t)
	const p = "example.com/arena/sub/f.txt"
	s.Write(p, strings.NewReader("one"), 0)
	os.RemoveAll(filepath.Join(dir, "example.com/arena/sub")) // the next write reopens
	s.Write(p, strings.NewReader("two"), 0)
	s.Write(p, &failingReader{n: 10}, 0)
	s.Write("example.com/arena/sub/big", strings.NewReader("toolarge"), 3)
	s.dirs.mu.Lock()
	defer s.dirs.mu.Unlock()
	for d, h := range s.dirs.entries {
		if h.refs != 0 {
			t.Errorf("folder handle %s still has %d users", d, h.refs)
		}
	}
}

// BenchmarkWriteSmallFiles is the server's side of a first push of small
// files: 2,000 uploads of 1 KiB, 8 at a time, into 20 game folders.
func BenchmarkWriteSmallFiles(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	for b.Loop() {
		b.StopTimer()
		s, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		work := make(chan int)
		var wg sync.WaitGroup
		b.StartTimer()
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					p := fmt.Sprintf("d%d.com/g%d/sub%d/f%d.bin", i%4, i%5, i%3, i)
					if _, err := s.Write(p, bytes.NewReader(body), 0); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for i := 0; i < 2000; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}

// Many uploads across more folders than handles are kept, while games are
// deleted: an upload may fail only because its folder went mid-way, a
// handle is never closed under an upload, and the tree matches the disk.
func TestFolderHandlesUnderChurn(t *testing.T) {
	s, dir := newStore(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wrote := make(chan struct{}, 1) // paces the deleter: one delete per few uploads
	var mu sync.Mutex
	var unexpected []error
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				p := fmt.Sprintf("d%d.com/g%d/f%d/x", (w+i)%3, i%4, (w*37+i)%(maxDirs+60))
				if _, err := s.Write(p, strings.NewReader(p), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
				select {
				case wrote <- struct{}{}:
				default:
				}
			}
		}()
	}
	var deleter sync.WaitGroup
	deleter.Add(1)
	go func() {
		defer deleter.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-wrote:
			}
			s.Delete(fmt.Sprintf("d%d.com/g%d", i%3, i%4))
		}
	}()
	wg.Wait()
	close(stop)
	deleter.Wait()
	for _, err := range unexpected {
		t.Error(err)
	}
	tree, err := s.Tree()
	if err != nil {
		t.Fatal(err)
	}
	onDisk := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			onDisk++
			rel, _ := filepath.Rel(dir, p)
			if tree[filepath.ToSlash(rel)] != sha([]byte(filepath.ToSlash(rel))) {
				t.Errorf("%s on disk, tree says %q", rel, tree[filepath.ToSlash(rel)])
			}
		}
		return nil
	})
	if onDisk != len(tree) {
		t.Fatalf("%d files on disk, %d in the tree", onDisk, len(tree))
	}
}

// A folder removed by hand and replaced by a file: the upload into it fails
// with an error (the server answers it), and the store goes on.
func TestFolderReplacedByAFile(t *testing.T) {
	s, dir := newStore(t)
	if _, err := s.Write("example.com/arena/sub/f", strings.NewReader("one"), 0); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "example.com/arena/sub")
	os.RemoveAll(sub)
	os.WriteFile(sub, []byte("now a file"), 0o644)
	if _, err := s.Write("example.com/arena/sub/f", strings.NewReader("two"), 0); err == nil {
		t.Fatal("wrote below a file")
	}
	if _, err := s.Write("example.com/arena/other", strings.NewReader("three"), 0); err != nil {
		t.Fatalf("the next upload: %v", err)
	}
}

// TestStaleTemporariesRemovedAtOpen: the temporaries of uploads cut off by a
// killed server are removed at the next start, and nothing else is.
func TestStaleTemporariesRemovedAtOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "games")
	deep := filepath.Join(dir, "example.com/arena/assets/img")
	os.MkdirAll(deep, 0o755)
	stale := []string{
		filepath.Join(dir, "example.com/arena", ".index.html.tmp-1234567890"),
		filepath.Join(deep, ".sprite.png.tmp-42"),
	}
	for _, p := range stale {
		os.WriteFile(p, bytes.Repeat([]byte("x"), 1000), 0o644)
	}
	kept := filepath.Join(deep, "sprite.png.tmp-not-ours")
	os.WriteFile(kept, []byte("keep"), 0o644)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range stale {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stale temporary %s left after Open: %v", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a file not of the store's naming was removed: %v", err)
	}
}

// TestDeleteRemovesEmptiedFolders: the folders a delete leaves empty go,
// up to the game folder, so a file of the same name can be written next.
func TestDeleteRemovesEmptiedFolders(t *testing.T) {
	s, dir := newStore(t)
	for _, p := range []string{"example.com/arena/docs/deep/a.txt", "example.com/arena/keep/b.txt", "example.com/arena/keep/sub/c.txt"} {
		if _, err := s.Write(p, strings.NewReader("x"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"example.com/arena/docs/deep/a.txt", "example.com/arena/keep/sub/c.txt"} {
		if err := s.Delete(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"example.com/arena/docs", "example.com/arena/keep/sub"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was left behind: %v", p, err)
		}
	}
	for _, p := range []string{"example.com/arena", "example.com/arena/keep/b.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if _, err := s.Write("example.com/arena/docs", strings.NewReader("now a file"), 0); err != nil {
		t.Fatalf("a file where the emptied folder was: %v", err)
	}
	// The last file of a game leaves the game folder itself.
	if err := s.Delete("example.com/arena/keep/b.txt"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("example.com/arena/docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "example.com/arena")); err != nil {
		t.Errorf("the game folder was removed: %v", err)
	}
}

// TestTreeLeavesOutNamesNotUTF8: a name that is not UTF-8, put there by
// hand, is not in the tree: JSON would name another file, which a client
// would then try to delete on every sync.
func TestTreeLeavesOutNamesNotUTF8(t *testing.T) {
	s, dir := newStore(t)
	if _, err := s.Write("example.com/arena/ok.txt", strings.NewReader("ok"), 0); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "example.com/arena/bad\xff.txt"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(dir, "example.com/arena/dir\xfe"), 0o755)
	os.WriteFile(filepath.Join(dir, "example.com/arena/dir\xfe/x"), []byte("x"), 0o644)
	tree, err := s.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 1 || tree["example.com/arena/ok.txt"] == "" {
		t.Fatalf("tree %v", tree)
	}
}
