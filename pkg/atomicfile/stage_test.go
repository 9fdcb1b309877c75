package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hiddenOf lists the hidden folders of the folder name in parent.
func hiddenOf(t *testing.T, parent, name string) []string {
	t.Helper()
	got, err := filepath.Glob(filepath.Join(parent, "."+name+".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// mustStage stages the folder path, failing the test if it cannot.
func mustStage(t *testing.T, path string) *Folder {
	t.Helper()
	f, err := StageFolder(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A staged folder is not there until it is placed, with every file it
// was given whole: a file whose size is refused, or whose reader fails,
// is not in it. After Place, a file is written atomically, replacing one
// there; nothing hidden is left.
func TestStageFolderAppearsWhole(t *testing.T) {
	parent := t.TempDir()
	path := filepath.Join(parent, "new")
	f := mustStage(t, path)
	defer f.Close()
	if _, err := f.Copy("a", strings.NewReader("one"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	tooShort := errors.New("too short")
	if _, err := f.Copy("b", strings.NewReader("tw"), 0o644, func(n int64) error { return tooShort }); !errors.Is(err, tooShort) {
		t.Fatalf("Copy with a refused size = %v", err)
	}
	if _, err := f.Copy("c", &failing{}, 0o644, nil); err == nil {
		t.Fatal("Copy from a failing reader succeeded")
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the folder is there before it is placed: %v", err)
	}
	hidden := hiddenOf(t, parent, "new")
	if len(hidden) != 1 || !f.Staged() {
		t.Fatalf("hidden folders %v (staged: %v), want 1", hidden, f.Staged())
	}
	wantEntries(t, hidden[0], 1) // a, not the failed b and c
	if err := f.Place(); err != nil {
		t.Fatal(err)
	}
	wantEntries(t, path, 1)
	wantContent(t, filepath.Join(path, "a"), "one")
	if fi, _ := os.Stat(filepath.Join(path, "a")); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode())
	}
	if _, err := f.Copy("a", strings.NewReader("two"), 0o644, func(n int64) error { return tooShort }); err == nil {
		t.Fatal("a refused Copy after Place succeeded")
	}
	wantContent(t, filepath.Join(path, "a"), "one") // atomic again: the old file stays
	if _, err := f.Copy("a", strings.NewReader("two"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(path, "a"), "two")
	wantEntries(t, parent, 1)
}

// failing is a reader that gives a byte, then fails.
type failing struct{ gave bool }

func (r *failing) Read(p []byte) (int, error) {
	if r.gave {
		return 0, errors.New("cut off")
	}
	r.gave = true
	p[0] = 'x'
	return 1, nil
}

// A staged folder closed before it is placed (the run ended in error)
// leaves nothing; one left by a run that was killed is removed by the next
// StageFolder of the same folder, while one a running StageFolder holds
// (another run, on Linux) and another folder's are left alone.
func TestStageFolderLeftovers(t *testing.T) {
	parent := t.TempDir()
	path := filepath.Join(parent, "new")
	f := mustStage(t, path)
	f.Copy("a", strings.NewReader("one"), 0o644, nil)
	f.Close()
	wantEntries(t, parent, 0)

	killed := filepath.Join(parent, ".new.tmp-123")
	other := filepath.Join(parent, ".newer.tmp-456")
	for _, d := range []string{killed, other} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "half"), []byte("x"), 0o644)
	}
	running := mustStage(t, path)
	defer running.Close()
	if _, err := os.Lstat(killed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's hidden folder is still there: %v", err)
	}
	// Where stages are locked, a killed run's hidden folder of another
	// folder goes too (the server may have dropped that folder: it is
	// never staged again); elsewhere it is left, as no lock tells whether
	// a run still writes it.
	if _, err := os.Lstat(other); locksStages != errors.Is(err, os.ErrNotExist) {
		t.Errorf("another folder's hidden folder, with locks %v: %v", locksStages, err)
	}
	if !locksStages {
		return
	}
	second := mustStage(t, path)
	defer second.Close()
	if n := len(hiddenOf(t, parent, "new")); n != 2 {
		t.Errorf("%d hidden folders of new, want 2: the running one's and the second's", n)
	}
}

// Where the folder was made meanwhile (by another run), Place moves each
// staged file into it, leaving the files there as they are.
func TestStageFolderPlacedIntoAFolderMadeMeanwhile(t *testing.T) {
	parent := t.TempDir()
	path := filepath.Join(parent, "new")
	f := mustStage(t, path)
	defer f.Close()
	f.Copy("a", strings.NewReader("ours a"), 0o644, nil)
	f.Copy("b", strings.NewReader("ours b"), 0o644, nil)
	os.Mkdir(path, 0o755)
	os.WriteFile(filepath.Join(path, "a"), []byte("theirs a"), 0o644)
	if err := f.Place(); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(path, "a"), "theirs a")
	wantContent(t, filepath.Join(path, "b"), "ours b")
	wantEntries(t, parent, 1)
	if _, err := f.Copy("c", strings.NewReader("after"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(path, "c"), "after")
}
