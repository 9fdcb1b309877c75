package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestUnnamedFilesLinkedInPlace: on Linux a write goes through a file with
// no name until it is complete, linked where nothing is, and otherwise
// placed as a named one is: a regular file replaced, anything else refused
// and left as it was, nothing left behind either way.
func TestUnnamedFilesLinkedInPlace(t *testing.T) {
	// Linked with AT_EMPTY_PATH (where it is refused, as through /proc),
	// and through /proc.
	for _, viaProc := range []bool{false, true} {
		t.Run(map[bool]string{false: "AT_EMPTY_PATH", true: "/proc"}[viaProc], func(t *testing.T) {
			noEmptyPath.Store(viaProc)
			t.Cleanup(func() { noEmptyPath.Store(false) })
			testUnnamedLinkedInPlace(t)
		})
	}
}

func testUnnamedLinkedInPlace(t *testing.T) {
	dir := t.TempDir()
	folder := openFolder(t, dir)
	p, err := startIn(folder.root, folder.self, "new", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if p.tmp != "" || p.folder == nil {
		t.Skipf("no unnamed file here (%q): the named temporaries are tested elsewhere", p.tmp)
	}
	wantEntries(t, dir, 0) // nothing is named while it is written
	p.Write([]byte("one"))
	if _, err := p.Commit(false); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(dir, "new"), "one")
	if _, err := folder.Copy("new", strings.NewReader("two"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(dir, "new"), "two")
	if err := CreateFile(filepath.Join(dir, "new"), []byte("three"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateFile over a file = %v", err)
	}
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	os.Symlink("new", filepath.Join(dir, "link"))
	for _, name := range []string{"folder", "link"} {
		if _, err := folder.Copy(name, strings.NewReader("x"), 0o644, nil); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("Copy onto %s = %v", name, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the symlink is not left as it was: %v %v", fi, err)
	}
	if err := WriteFile(filepath.Join(dir, "durable"), []byte("four"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "durable")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o", fi.Mode().Perm())
	}
	wantEntries(t, dir, 4) // new, folder, link, durable

	// A file whose folder is opened for it alone, dropped: nothing left.
	p, _ = startIn(folder.root, nil, "dropped", 0o644)
	p.Write([]byte("x"))
	p.Discard()
	wantEntries(t, dir, 4)
}

// TestUnnamedFilesFallBack: where linking an unnamed file fails (no /proc
// here), the file is copied into a named temporary and placed, and the
// files after it are named from the start.
func TestUnnamedFilesFallBack(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	old := procFD
	procFD = filepath.Join(dir, "no-proc") + "/"
	noEmptyPath.Store(true)
	t.Cleanup(func() { procFD = old; noUnnamed.Store(false); noEmptyPath.Store(false) })
	os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o644)
	p, err := startIn(root, nil, "f", 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if p.tmp != "" {
		t.Skip("no unnamed file here")
	}
	old2 := syscall.Umask(0o077)
	p.Write([]byte("new content"))
	p.setMode(0o640)
	syscall.Umask(old2)
	if _, err := p.Commit(false); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(dir, "f"), "new content")
	if fi, _ := os.Stat(filepath.Join(dir, "f")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %o", fi.Mode().Perm())
	}
	if !noUnnamed.Load() {
		t.Fatal("a failed link did not turn unnamed files off")
	}
	if p, _ := startIn(root, nil, "g", 0o644); p.tmp == "" {
		t.Fatal("an unnamed file after a failed link")
	} else {
		p.Discard()
	}
	wantEntries(t, dir, 1)
}
