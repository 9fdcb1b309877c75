package mirror

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/game"
)

const token = "abababababababababababababababababababababababababababababababab"

// counter counts requests by method, around the real server.
type counter struct {
	mu      sync.Mutex
	n       map[string]int
	next    http.Handler
	fail    func(r *http.Request) bool // answer 500 to these
	noBatch bool                       // answer /api/version as a server without the batch upload
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.n[r.Method]++
	c.n[r.Method+" "+r.URL.Path]++
	noBatch := c.noBatch
	c.mu.Unlock()
	if noBatch && r.URL.Path == api.PathVersion {
		w.Write([]byte(`{"api": 1}`)) // a server without the batch upload
		return
	}
	if c.fail != nil && c.fail(r) {
		w.WriteHeader(500)
		w.Write([]byte(`{"error":"disk on fire"}`))
		return
	}
	c.next.ServeHTTP(w, r)
}

func (c *counter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

type fixture struct {
	root  string // local sites
	games string // server games root
	cnt   *counter
	c     *apiclient.Client
}

func newFixture(t *testing.T, variant api.Variant) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), cnt: &counter{n: map[string]int{}}}
	e := contracttest.Start(t, contracttest.Options{Variant: variant, Token: token,
		Wrap:   func(h http.Handler) http.Handler { f.cnt.next = h; return f.cnt },
		Client: apiclient.ClientConfig{Attempts: 2, RetryBase: 1}})
	f.games, f.c = e.GamesRoot, e.Client
	return f
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeFiles writes pairs of a path under root and its content.
func writeFiles(t *testing.T, root string, pathsAndBodies ...string) {
	t.Helper()
	for i := 0; i+1 < len(pathsAndBodies); i += 2 {
		write(t, root, pathsAndBodies[i], pathsAndBodies[i+1])
	}
}

// failUploadsOf makes the server fail the uploads of paths ending in suffix.
func (f *fixture) failUploadsOf(suffix string) {
	f.cnt.fail = func(r *http.Request) bool {
		return r.Method == "PUT" && strings.HasSuffix(r.URL.Query().Get("path"), suffix)
	}
}

func (f *fixture) serverFiles(t *testing.T) []string {
	var out []string
	filepath.WalkDir(f.games, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(f.games, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func (f *fixture) sync(t *testing.T, opts SyncOptions) (SyncSummary, error) {
	t.Helper()
	return Sync(context.Background(), f.root, f.c, opts, nil)
}

const cfg = `{"tickRate": 20, "sendRate": 10, "capacity": 4, "origins": ["*"]}`

func TestStructureRules(t *testing.T) {
	f := newFixture(t, api.Variant1)
	for rel, body := range map[string]string{
		"example.com/arena/hoster-game.json":          cfg,
		"example.com/arena/index.html":                "<html>",
		"example.com/arena/sub/deep/x.js":             "x",
		"example.com/arena/.hidden":                   "no",
		"example.com/arena/.git/config":               "no",
		"example.com/arena/node_modules/lib/index.js": "no",
		"example.com/arena/_drafts/wip.js":            "no",
		"example.com/arena/_notes.txt":                "no",
		"example.com/nogame/readme.txt":               "no: no hoster-game.json",
		"example.com/_private/hoster-game.json":       cfg,
		"example.com/.cache/hoster-game.json":         cfg,
		"example.com/loose.txt":                       "no: loose in a domain",
		"localhost/game/hoster-game.json":             cfg,
		"_reserved.com/game/hoster-game.json":         cfg,
		".hidden.com/game/hoster-game.json":           cfg,
		"loose-at-root.txt":                           "no",
	} {
		write(t, f.root, rel, body)
	}
	os.Symlink("/etc/passwd", filepath.Join(f.root, "example.com/arena/link"))
	sum, err := f.sync(t, SyncOptions{})
	if err != nil || len(sum.Failures) > 0 {
		t.Fatalf("%v %+v", err, sum.Failures)
	}
	want := []string{"example.com/arena/hoster-game.json", "example.com/arena/index.html", "example.com/arena/sub/deep/x.js"}
	if got := f.serverFiles(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("server holds %v, want %v", got, want)
	}
	if sum.Uploaded != 3 || sum.Bytes != int64(len(cfg)+len("<html>")+1) {
		t.Fatalf("summary %+v", sum)
	}
}

func TestNoOpSecondSyncAndChanges(t *testing.T) {
	contracttest.EachVariant(t, func(t *testing.T, variant api.Variant) {
		f := newFixture(t, variant)
		for i := 0; i < 20; i++ {
			write(t, f.root, fmt.Sprintf("a.com/g%d/hoster-game.json", i%3), cfg)
			write(t, f.root, fmt.Sprintf("a.com/g%d/f%d.txt", i%3, i), strings.Repeat("x", i*100))
		}
		if sum, err := f.sync(t, SyncOptions{}); err != nil || sum.Uploaded != 23 || len(f.serverFiles(t)) != 23 {
			t.Fatalf("first sync: %v, %+v, server holds %d files", err, sum, len(f.serverFiles(t)))
		}
		f.cnt.reset()
		sum, err := f.sync(t, SyncOptions{})
		n := f.cnt.reset()
		if err != nil || n["PUT"] != 0 || n["DELETE"] != 0 || n["GET"] != 1 || sum.Unchanged != 23 {
			t.Fatalf("second sync: %v, requests %v, %+v", err, n, sum)
		}
		// Change one, delete one, add one.
		write(t, f.root, "a.com/g0/f0.txt", "changed")
		os.Remove(filepath.Join(f.root, "a.com/g1/f1.txt"))
		write(t, f.root, "a.com/g2/new.txt", "new")
		sum, err = f.sync(t, SyncOptions{})
		n = f.cnt.reset()
		if err != nil || n["PUT"] != 2 || n["DELETE"] != 1 || sum.Uploaded != 2 || sum.Deleted != 1 {
			t.Fatalf("change sync: %v, requests %v, %+v", err, n, sum)
		}
		got, _ := os.ReadFile(filepath.Join(f.games, "a.com/g0/f0.txt"))
		if string(got) != "changed" {
			t.Fatal("the change did not land")
		}
		if _, err := os.Stat(filepath.Join(f.games, "a.com/g1/f1.txt")); !os.IsNotExist(err) {
			t.Fatal("the deleted file is still on the server")
		}
	})
}

func TestPruneSafety(t *testing.T) {
	f := newFixture(t, api.Variant1)
	write(t, f.root, "a.com/keep/hoster-game.json", cfg)
	// Server files the client does not have: some managed, some not.
	for _, rel := range []string{
		"a.com/keep/stale.js",           // managed: deleted
		"a.com/keep/_data/scores.json",  // reserved segment: kept
		"a.com/keep/.env",               // hidden: kept
		"a.com/gone/hoster-game.json",   // a whole game gone locally: deleted as one folder
		"a.com/gone/x/y.js",             //   (with all its files)
		"a.com/partly/hoster-game.json", // a gone game with a reserved file:
		"a.com/partly/_keep/db.json",    //   its managed files go one by one, the reserved stays
		"b.org/other/hoster-game.json",  // another domain gone locally: deleted
		"a.com/loose.txt",               // shallower than <domain>/<game>/: kept
		"nodot/game/x.js",               // not a domain: kept
		"_res.com/game/x.js",            // reserved domain: kept
	} {
		write(t, f.games, rel, "server")
	}
	f.cnt.reset()
	sum, err := f.sync(t, SyncOptions{})
	if err != nil || len(sum.Failures) > 0 {
		t.Fatalf("%v %+v", err, sum.Failures)
	}
	want := []string{"_res.com/game/x.js", "a.com/keep/.env", "a.com/keep/_data/scores.json", "a.com/keep/hoster-game.json",
		"a.com/loose.txt", "a.com/partly/_keep/db.json", "nodot/game/x.js"}
	if got := f.serverFiles(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("server holds\n%v\nwant\n%v", got, want)
	}
	if sum.Deleted != 5 {
		t.Fatalf("deleted %d files, want 5", sum.Deleted)
	}
	if n := f.cnt.reset(); n["DELETE"] != 4 {
		t.Fatalf("%d DELETE requests, want 4 (stale.js, the gone game as one, partly's config, b.org's game)", n["DELETE"])
	}
}

func TestEmptyRootAndMaxDelete(t *testing.T) {
	f := newFixture(t, api.Variant1)
	for i := 0; i < 5; i++ {
		write(t, f.games, fmt.Sprintf("a.com/g/f%d", i), "x")
	}
	write(t, f.root, "a.com/notagame/readme", "no hoster-game.json here")
	if _, err := f.sync(t, SyncOptions{}); !errors.Is(err, ErrEmptyRoot) {
		t.Fatalf("empty root: %v", err)
	}
	if len(f.serverFiles(t)) != 5 {
		t.Fatal("the empty-root rail let something be deleted")
	}
	write(t, f.root, "a.com/g/hoster-game.json", cfg)
	if _, err := f.sync(t, SyncOptions{Plan: PlanOptions{MaxDelete: 4}}); err == nil || !strings.Contains(err.Error(), "--max-delete 4") {
		t.Fatalf("max-delete: %v", err)
	}
	if len(f.serverFiles(t)) != 5 {
		t.Fatal("--max-delete let something change")
	}
	os.RemoveAll(filepath.Join(f.root, "a.com"))
	if sum, err := f.sync(t, SyncOptions{Plan: PlanOptions{AllowEmpty: true}}); err != nil || sum.Deleted != 5 {
		t.Fatalf("--allow-empty: %v %+v", err, sum)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	f := newFixture(t, api.Variant1)
	write(t, f.root, "a.com/g/hoster-game.json", cfg)
	write(t, f.root, "a.com/g/new.js", "n")
	write(t, f.games, "a.com/g/old.js", "o")
	f.cnt.reset()
	sum, err := f.sync(t, SyncOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.cnt.reset(); n["PUT"] != 0 || n["DELETE"] != 0 {
		t.Fatalf("dry run made requests %v", n)
	}
	if len(sum.Plan.Uploads) != 2 || len(sum.Plan.Deletes) != 1 || sum.Plan.Deletes[0].Path != "a.com/g/old.js" {
		t.Fatalf("plan %+v", sum.Plan)
	}
	// hoster-game.json goes last within its game.
	if sum.Plan.Uploads[1].Path != "a.com/g/hoster-game.json" {
		t.Fatalf("upload order %+v", sum.Plan.Uploads)
	}
	// The real run does exactly the plan.
	real, _ := f.sync(t, SyncOptions{})
	if n := f.cnt.reset(); n["PUT"] != 2 || n["DELETE"] != 1 || real.Uploaded != 2 || real.Deleted != 1 {
		t.Fatalf("real run after dry run: %v %+v", n, real)
	}
}

func TestOneFailedUploadSkipsDeletes(t *testing.T) {
	f := newFixture(t, api.Variant1)
	f.failUploadsOf("bad.js")
	writeFiles(t, f.root, "a.com/g/hoster-game.json", cfg, "a.com/g/bad.js", "b", "a.com/g/good.js", "g")
	write(t, f.games, "a.com/g/old.js", "o")
	sum, err := f.sync(t, SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The game's config is held back: a game with a failed upload keeps
	// its previous code.
	sort.Slice(sum.Failures, func(i, j int) bool { return sum.Failures[i].Path < sum.Failures[j].Path })
	if len(sum.Failures) != 2 || sum.Failures[0].Path != "a.com/g/bad.js" || !strings.Contains(sum.Failures[0].Error, "disk on fire") ||
		sum.Failures[1].Path != "a.com/g/hoster-game.json" || !strings.Contains(sum.Failures[1].Error, "held back") {
		t.Fatalf("failures %+v", sum.Failures)
	}
	if sum.Uploaded != 1 || !sum.DeletesSkipped {
		t.Fatalf("summary %+v", sum)
	}
	if _, err := os.Stat(filepath.Join(f.games, "a.com/g/old.js")); err != nil {
		t.Fatal("a delete ran although an upload failed")
	}
}

func TestManaged(t *testing.T) {
	for p, want := range map[string]bool{
		"a.com/g/x": true, "a.com/g/sub/x": true, "a.com/g": false, "a.com/x": false,
		"a.com/_g/x": false, "a.com/g/_x": false, "a.com/g/s/_x/y": false, "nodot/g/x": false,
		"a.com/g/.x": false, "a.com/g/node_modules/x": false, "a.com/g/../x": false, "a.com//x": false,
	} {
		if Managed(p) != want {
			t.Errorf("Managed(%q) = %v", p, !want)
		}
	}
}

// An unhashed local file (the server lacks it, so it was never hashed) is
// always uploaded: an empty hash must never match an absent remote entry.
func TestPlanUnhashedIsUploaded(t *testing.T) {
	local := &Local{Games: []string{"a.com/g"}, Files: map[string]*File{
		"a.com/g/new": {Path: "a.com/g/new", Size: 3},
		"a.com/g/old": {Path: "a.com/g/old", Size: 3, Hash: "abc"},
	}}
	p, err := MakePlan(local, api.Tree{"a.com/g/old": "abc"}, PlanOptions{})
	if err != nil || len(p.Uploads) != 1 || p.Uploads[0].Path != "a.com/g/new" || p.Unchanged != 1 {
		t.Fatalf("plan %+v, %v", p, err)
	}
}

// Prepare runs before the walk, so what it writes is pushed; its error ends
// the sync as it is, with nothing changed on the server.
func TestPrepareRunsBeforeTheWalk(t *testing.T) {
	f := newFixture(t, api.Variant1)
	write(t, f.root, "example.com/arena/hoster-game.json", cfg)
	sum, err := f.sync(t, SyncOptions{Prepare: func() ([]string, error) {
		write(t, f.root, "example.com/arena/hoster.server.js", "generated")
		return nil, nil
	}})
	if err != nil || sum.Uploaded != 2 {
		t.Fatalf("sync = %+v, %v; want both files uploaded", sum, err)
	}
	f.cnt.reset()
	boom := errors.New("generator broke")
	write(t, f.root, "example.com/arena/new.js", "x")
	if _, err := f.sync(t, SyncOptions{Prepare: func() ([]string, error) { return nil, boom }}); err != boom {
		t.Fatalf("err = %v, want the Prepare error itself", err)
	}
	if n := f.cnt.reset(); n["PUT"] != 0 || n["DELETE"] != 0 {
		t.Fatalf("a failed Prepare still changed the server: %v", n)
	}
}

// Against hoster-server, which offers the batch upload, small files go in
// batches and the mirror ends exact, in both variants; against a server
// that does not offer it, every file is a PUT of its own.
func TestSyncBatchesWhereOffered(t *testing.T) {
	contracttest.EachVariant(t, func(t *testing.T, variant api.Variant) {
		for _, offered := range []bool{true, false} {
			t.Run(fmt.Sprint("offered=", offered), func(t *testing.T) {
				f := newFixture(t, variant)
				f.cnt.noBatch = !offered
				if _, err := f.c.Version(context.Background()); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 40; i++ {
					write(t, f.root, fmt.Sprintf("a.com/g%d/hoster-game.json", i%2), cfg)
					write(t, f.root, fmt.Sprintf("a.com/g%d/f%d.txt", i%2, i), strings.Repeat("x", i*100))
				}
				write(t, f.root, "a.com/g0/big.bin", strings.Repeat("b", 2<<20))
				sum, err := f.sync(t, SyncOptions{})
				if err != nil || len(sum.Failures) > 0 || sum.Uploaded != 43 {
					t.Fatalf("%+v, %v", sum, err)
				}
				n := f.cnt.reset()
				// Offered, every upload goes in a batch, big.bin in one of its own.
				if offered && (n["PUT "+api.PathFiles] < 2 || n["PUT "+api.PathFile] != 0) || !offered && (n["PUT "+api.PathFiles] != 0 || n["PUT "+api.PathFile] != 43) {
					t.Errorf("requests %v", n)
				}
				// Offered, the last batch (the code files) brings back the
				// tree for the check: the tree is read once, for the plan.
				if reads := n["GET "+api.PathTree]; offered && reads != 1 || !offered && reads != 2 {
					t.Errorf("the tree read %d times; requests %v", reads, n)
				}
				local, _ := Walk(f.root)
				local.Hash()
				tree, _ := f.c.Tree(context.Background())
				if len(tree) != len(local.Files) {
					t.Fatalf("server has %d files, local %d", len(tree), len(local.Files))
				}
				for p, lf := range local.Files {
					if tree[p] != lf.Hash {
						t.Errorf("%s differs on the server", p)
					}
				}
			})
		}
	})
}

// A game Prepare leaves (it failed to generate) keeps its server files
// exactly: nothing uploaded, nothing deleted, not even a folder delete; the
// other games are pushed and pruned as usual.
func TestPrepareLeavesABrokenGame(t *testing.T) {
	f := newFixture(t, api.Variant1)
	writeFiles(t, f.root, "a.com/good/hoster-game.json", cfg, "a.com/good/new.js", "new",
		"a.com/broken/hoster-game.json", cfg, "a.com/broken/changed.js", "local edit")
	writeFiles(t, f.games, "a.com/good/stale.js", "stale",
		"a.com/broken/changed.js", "last good", "a.com/broken/hoster.server.js", "last good module")
	sum, err := f.sync(t, SyncOptions{Prepare: func() ([]string, error) { return []string{"a.com/broken"}, nil }})
	if err != nil || len(sum.Failures) > 0 {
		t.Fatalf("sync = %+v, %v", sum, err)
	}
	if !slices.Equal(sum.Left, []string{"a.com/broken"}) {
		t.Fatalf("Left = %v", sum.Left)
	}
	want := []string{"a.com/broken/changed.js", "a.com/broken/hoster.server.js", "a.com/good/hoster-game.json", "a.com/good/new.js"}
	if got := f.serverFiles(t); !slices.Equal(got, want) {
		t.Fatalf("server files %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(f.games, "a.com/broken/changed.js")); string(b) != "last good" {
		t.Fatalf("the broken game's file was overwritten: %q", b)
	}
	// Even a broken game absent from the server is not created.
	write(t, f.root, "a.com/fresh/hoster-game.json", cfg)
	f.sync(t, SyncOptions{Prepare: func() ([]string, error) { return []string{"a.com/broken", "a.com/fresh"}, nil }})
	if got := f.serverFiles(t); !slices.Equal(got, want) {
		t.Fatalf("server files %v, want %v", got, want)
	}
}

// Whatever tree a server claims to have, the plan deletes only managed
// files or whole games absent locally, never a local file, and never
// anything above <domain>/<game>.
func FuzzPlanAgainstAHostileTree(f *testing.F) {
	for _, s := range []string{
		"example.com/arena/old.js\nexample.com/gone/x.js",
		"../../etc/passwd\n/abs/x\nexample.com\nexample.com/arena",
		"example.com/arena/_keep/x\nexample.com/arena/.git/config\nexample.com/arena/node_modules/a",
		"example.com/arena/./x\nexample.com/arena//x\nexample.com/_private/x/y\nlocalhost/g/x",
	} {
		f.Add(s)
	}
	local := &Local{
		Files: map[string]*File{"example.com/arena/hoster-game.json": {Path: "example.com/arena/hoster-game.json", Hash: "h"}},
		Games: []string{"example.com/arena"},
	}
	f.Fuzz(func(t *testing.T, blob string) {
		remote := api.Tree{}
		for _, p := range strings.Split(blob, "\n") {
			remote[p] = "x"
		}
		plan, err := MakePlan(local, remote, PlanOptions{})
		if err != nil {
			t.Fatalf("MakePlan: %v", err)
		}
		for _, d := range plan.Deletes {
			if _, ok := local.Files[d.Path]; ok {
				t.Fatalf("deletes the local file %q", d.Path)
			}
			segs := strings.Split(d.Path, "/")
			switch {
			case len(segs) == 2:
				if !game.IsDomainName(segs[0]) || !game.IsGameName(segs[1]) || d.Path == "example.com/arena" {
					t.Fatalf("deletes the folder %q", d.Path)
				}
			case !Managed(d.Path):
				t.Fatalf("deletes the unmanaged %q", d.Path)
			}
		}
		for p := range remote {
			if Managed(p) {
				for _, s := range strings.Split(p, "/") {
					if s == "" || s == "." || s == ".." || strings.HasPrefix(s, "_") || strings.HasPrefix(s, ".") || s == "node_modules" {
						t.Fatalf("Managed(%q) with segment %q", p, s)
					}
				}
			}
		}
	})
}

// A file that cannot be read when it is hashed stops the hashing with an
// error naming it; nothing is planned from a half-hashed tree.
func TestHashNamesAnUnreadableFile(t *testing.T) {
	root := t.TempDir()
	write(t, root, "example.com/arena/hoster-game.json", cfg)
	write(t, root, "example.com/arena/gone.js", "x")
	l, err := Walk(root)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "example.com/arena/gone.js"))
	if err := l.Hash(); err == nil || !strings.Contains(err.Error(), "hashing example.com/arena/gone.js") {
		t.Fatalf("Hash = %v, want an error naming the vanished file", err)
	}
}

// TestNameNotUTF8IsRefused: a local name that is not valid UTF-8 is never
// sent (the server would refuse it, and its tree could not name it back);
// it is a named failure on every run, and nothing else churns.
func TestNameNotUTF8IsRefused(t *testing.T) {
	f := newFixture(t, api.Variant1)
	writeFiles(t, f.root, "a.com/g/hoster-game.json", cfg, "a.com/g/bad\xff.txt", "b",
		"a.com/g/dir\xfe/x.txt", "x", "a.com/g/ok.txt", "o")
	for run := 1; run <= 2; run++ {
		sum, err := f.sync(t, SyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, fl := range sum.Failures {
			paths = append(paths, fl.Path)
		}
		sort.Strings(paths)
		if fmt.Sprint(paths) != `[a.com/g/bad\xff.txt a.com/g/dir\xfe]` {
			t.Fatalf("run %d: failures %+v", run, sum.Failures)
		}
		if sum.Deleted != 0 || (run == 2 && sum.Uploaded != 0) {
			t.Fatalf("run %d churns: %+v", run, sum)
		}
	}
	if got := fmt.Sprint(f.serverFiles(t)); got != "[a.com/g/hoster-game.json a.com/g/ok.txt]" {
		t.Fatalf("server holds %s", got)
	}
}

// TestNameWithControlCharacterIsRefused: a local name holding a control
// character (a newline would forge a line of every report naming it) is
// refused by the same rule as a name that is not UTF-8, and shown on one
// line.
func TestNameWithControlCharacterIsRefused(t *testing.T) {
	f := newFixture(t, api.Variant1)
	writeFiles(t, f.root, "a.com/g/hoster-game.json", cfg, "a.com/g/bad\nfailed: forged.txt", "b", "a.com/g/ok.txt", "o")
	sum, err := f.sync(t, SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Failures) != 1 || sum.Failures[0].Path != `a.com/g/bad\nfailed: forged.txt` ||
		!strings.Contains(sum.Failures[0].Error, "holds a control character") {
		t.Fatalf("failures %+v", sum.Failures)
	}
	if got := fmt.Sprint(f.serverFiles(t)); got != "[a.com/g/hoster-game.json a.com/g/ok.txt]" {
		t.Fatalf("server holds %s", got)
	}
}
