package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists a folder's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
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
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
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
	if got, _ := os.ReadFile(filepath.Join(dir, "elsewhere")); string(got) != "keep" {
		t.Fatalf("a symlink's target was written: %q", got)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "link")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	if names := entries(t, dir); len(names) != 3 {
		t.Fatalf("left behind: %v", names)
	}
}

func TestFailureLeavesTheTargetAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("old"), 0o644)
	// The last step fails, once the temporary file is written.
	cause := errors.New("the rename failed")
	_, err := write(p, strings.NewReader("new"), 0o644, func(string, string) error { return cause }, true, nil)
	if !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "writing "+p+": ") {
		t.Fatalf("error %v, want 'writing %s: ' and the cause", err, p)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("the target changed to %q", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
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
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
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
	if got, _ := os.ReadFile(p); string(got) != "old" || len(entries(t, dir)) != 1 {
		t.Fatalf("target %q, entries %v", got, entries(t, dir))
	}
	if n, err := Copy(p, strings.NewReader("fresh"), 0o644, nil); err != nil || n != 5 {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	if got, _ := os.ReadFile(p); string(got) != "fresh" {
		t.Fatalf("target %q", got)
	}
	for name, want := range map[string]string{".access.log.tmp-123": "access.log", ".a.tmp-x": "", "access.log": "", ".tmp-1": ""} {
		if got, ok := TargetOf(name); got != want || ok != (want != "") {
			t.Errorf("TargetOf(%q) = %q, %v", name, got, ok)
		}
	}
}
