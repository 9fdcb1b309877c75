package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// wantEntries fails unless dir holds n entries: what a write leaves behind.
func wantEntries(t *testing.T, dir string, n int) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Fatalf("%s holds %v, want %d entries", dir, names, n)
	}
}

// wantContent fails unless the file at p holds want.
func wantContent(t *testing.T, p, want string) {
	t.Helper()
	if got, err := os.ReadFile(p); string(got) != want {
		t.Fatalf("%s holds %q (%v), want %q", p, got, err, want)
	}
}

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for i, data := range []string{"one", "two, longer", "", "four"} {
		write := WriteFile
		if i%2 == 1 {
			write = WriteFileUnsynced
		}
		if err := write(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != data {
			t.Fatalf("read %q, want %q", got, data)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 640", fi.Mode().Perm())
	}
	wantEntries(t, dir, 1)
}

func TestRefusesANonRegularTarget(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	os.WriteFile(filepath.Join(dir, "elsewhere"), []byte("keep"), 0o644)
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "link"))
	for _, name := range []string{"folder", "link"} {
		for _, write := range []func(string, []byte, fs.FileMode) error{WriteFile, WriteFileUnsynced, CreateFile} {
			err := write(filepath.Join(dir, name), []byte("x"), 0o644)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
				t.Fatalf("writing over %s: %v, want an error naming it", name, err)
			}
		}
	}
	if err := WriteFile(filepath.Join(dir, "folder"), nil, 0o644); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("over a folder: %v, want ErrNotRegular", err)
	}
	wantContent(t, filepath.Join(dir, "elsewhere"), "keep")
	if fi, _ := os.Lstat(filepath.Join(dir, "link")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	wantEntries(t, dir, 3)
}

func TestFailureLeavesTheTargetAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("old"), 0o644)
	// The last step fails, once the temporary file is written.
	cause := errors.New("the rename failed")
	_, err := write(p, strings.NewReader("new"), 0o644, func(*Pending, bool) (fs.FileInfo, error) { return nil, cause }, true, nil)
	if !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "writing "+p+": ") {
		t.Fatalf("error %v, want 'writing %s: ' and the cause", err, p)
	}
	wantContent(t, p, "old")
	wantEntries(t, dir, 1)
	// No folder: nothing is made.
	if err := WriteFile(filepath.Join(dir, "none", "f"), nil, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("into a missing folder: %v", err)
	}
}

func TestCreateFileNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "token")
	errs := make(chan error, 8)
	for i := range 8 {
		go func() { errs <- CreateFile(p, []byte{byte('a' + i)}, 0o600) }()
	}
	won := 0
	for range 8 {
		if err := <-errs; err == nil {
			won++
		} else if !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racing creators succeeded, want 1", won)
	}
	wantEntries(t, dir, 1)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 600", fi.Mode().Perm())
	}
}

// TestCopyKeepsOnlyWhatIsAccepted: a download cut short (refused by accept)
// leaves the target as it was and no temporary file; an accepted one
// replaces it whole. TargetOf reads a temporary file's name back.
func TestCopyKeepsOnlyWhatIsAccepted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "access.log")
	os.WriteFile(p, []byte("old"), 0o644)
	short := errors.New("received 3 bytes, the listing said 5")
	n, err := Copy(p, strings.NewReader("new"), 0o644, func(n int64) error {
		if n != 5 {
			return short
		}
		return nil
	})
	if !errors.Is(err, short) || n != 3 {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	wantContent(t, p, "old")
	wantEntries(t, dir, 1)
	if n, err := Copy(p, strings.NewReader("fresh"), 0o644, nil); err != nil || n != 5 {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	wantContent(t, p, "fresh")
	for name, want := range map[string]string{".access.log.tmp-123": "access.log", ".a.tmp-x": "", "access.log": "", ".tmp-1": ""} {
		if got, ok := TargetOf(name); got != want || ok != (want != "") {
			t.Errorf("TargetOf(%q) = %q, %v", name, got, ok)
		}
	}
}

// openRoot opens dir as a root, closed when the test ends.
func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// TestPendingInARoot: a Pending writes through a folder handle, replaces a
// regular file, and tells the stat of the file it put in place.
func TestPendingInARoot(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("old"), 0o644)
	root := openRoot(t, dir)
	p, err := CreateIn(root, "sub/f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Discard()
	if _, ok := TargetOf(filepath.Base(p.tmp)); !ok || filepath.Dir(p.tmp) != "sub" {
		t.Fatalf("temporary %q is not of the package's naming beside its target", p.tmp)
	}
	io.WriteString(p, "new")
	fi, err := p.Commit(false)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := os.Stat(filepath.Join(dir, "sub", "f"))
	if !os.SameFile(fi, now) || fi.Size() != 3 {
		t.Fatalf("Commit's stat %v is not the file in place", fi)
	}
	wantContent(t, filepath.Join(dir, "sub", "f"), "new")
	p.Discard() // after Commit: nothing
	wantEntries(t, filepath.Join(dir, "sub"), 1)
	// Durable, into the root's own folder.
	p, err = CreateIn(root, "g", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(true); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "g")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
}

// TestPendingRefusesANonRegularTarget: a folder, a symlink (even to a
// regular file inside) or a fifo at the target is refused before anything is
// written, and left as it was.
func TestPendingRefusesANonRegularTarget(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	os.WriteFile(filepath.Join(dir, "regular"), []byte("keep"), 0o644)
	os.Symlink("regular", filepath.Join(dir, "link"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := openRoot(t, dir)
	for _, name := range []string{"folder", "link", "fifo"} {
		p, err := CreateIn(root, name, 0o644)
		if !errors.Is(err, ErrNotRegular) {
			p.Discard()
			t.Fatalf("CreateIn over %s: %v, want ErrNotRegular", name, err)
		}
	}
	if _, err := CreateIn(root, "folder", 0o644); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("over a folder: %v, want EISDIR too", err)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "link")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	wantContent(t, filepath.Join(dir, "regular"), "keep")
	wantEntries(t, dir, 4)
}

// TestPendingFailureLeavesTheTargetAndNoTemporary: a Commit that cannot
// rename (the target became a folder meanwhile) and a Discard each leave the
// target as it was and no temporary file.
func TestPendingFailureLeavesTheTargetAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o644)
	p, err := CreateIn(root, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p, "cut off")
	p.Discard()
	wantContent(t, filepath.Join(dir, "f"), "old")
	p, err = CreateIn(root, "d", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "d", "inside"), 0o755) // not empty: a rename cannot replace it
	io.WriteString(p, "new")
	if _, err := p.Commit(true); err == nil {
		t.Fatal("Commit over a folder succeeded")
	}
	p.Discard()
	wantEntries(t, dir, 2)
	// A missing folder: nothing is made.
	if _, err := CreateIn(root, "none/f", 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("into a missing folder: %v", err)
	}
}

// TestPendingNeverLeadsOutOfTheRoot: a symlinked folder that points out of
// the root is not followed, and nothing is written outside.
func TestPendingNeverLeadsOutOfTheRoot(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("keep"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "out"))
	os.Symlink("../..", filepath.Join(dir, "up"))
	root := openRoot(t, dir)
	for _, name := range []string{"out/secret", "out/new", "up/new", "../new"} {
		if p, err := CreateIn(root, name, 0o644); err == nil {
			p.Discard()
			t.Fatalf("CreateIn(%q) made a file", name)
		}
	}
	wantContent(t, filepath.Join(outside, "secret"), "keep")
	wantEntries(t, outside, 1)
}

// TestTemporaryNamesFit: a target with the longest name a folder allows
// still gets a temporary (its name cut short), recognised by TargetOf.
func TestTemporaryNamesFit(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{strings.Repeat("x", maxName), strings.Repeat("é", maxName/2)} {
		if err := WriteFile(filepath.Join(dir, name), []byte("long"), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := tempFor(name)
		target, ok := TargetOf(tmp)
		if len(tmp) > maxName || !ok || !strings.HasPrefix(name, target) || !utf8.ValidString(tmp) {
			t.Fatalf("temporary %q for a long name", tmp)
		}
	}
}

// TestFolderCopy: a Folder kept open for many files writes each, keeps
// only what is accepted, refuses a non-regular target, and never leads out
// of the folder.
func TestFolderCopy(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	os.Symlink(t.TempDir(), filepath.Join(dir, "out"))
	root := openFolder(t, dir)
	for i, name := range []string{"a", "sub/b", "c"} {
		if n, err := root.Copy(name, strings.NewReader(name), 0o644, nil); err != nil || n != int64(len(name)) {
			t.Fatalf("file %d: CopyIn = %d, %v", i, n, err)
		}
		wantContent(t, filepath.Join(dir, name), name)
	}
	short := errors.New("short")
	if _, err := root.Copy("a", strings.NewReader("new"), 0o644, func(int64) error { return short }); !errors.Is(err, short) {
		t.Fatalf("Copy, refused = %v", err)
	}
	wantContent(t, filepath.Join(dir, "a"), "a")
	if _, err := root.Copy("folder", strings.NewReader("x"), 0o644, nil); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Copy onto a folder = %v", err)
	}
	if _, err := root.Copy("out/f", strings.NewReader("x"), 0o644, nil); err == nil {
		t.Fatal("Copy through a symlink out of the root succeeded")
	}
	wantEntries(t, dir, 5) // a, c, sub, folder, out, and no temporary
	wantEntries(t, filepath.Join(dir, "sub"), 1)
}

// openFolder opens dir as a Folder, closed when the test ends.
func openFolder(t *testing.T, dir string) *Folder {
	t.Helper()
	f, err := OpenFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
