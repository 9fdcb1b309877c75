//go:build unix

package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestModeWhateverTheUmask: a file gets the mode asked for, where the umask
// takes bits away (a chmod) and where it takes none (none needed), in a
// staged folder too.
func TestModeWhateverTheUmask(t *testing.T) {
	dir := t.TempDir()
	folder := openFolder(t, dir)
	staged, err := StageFolder(filepath.Join(dir, "staged"))
	if err != nil {
		t.Fatal(err)
	}
	defer staged.Close()
	for _, c := range []struct {
		umask int
		perm  os.FileMode
	}{{0o077, 0o644}, {0o022, 0o644}, {0, 0o640}, {0o022, 0o666}} {
		old := syscall.Umask(c.umask)
		_, err := folder.Copy("f", strings.NewReader("x"), c.perm, nil)
		_, err2 := Copy(filepath.Join(dir, "g"), strings.NewReader("x"), c.perm, nil)
		_, err3 := staged.Copy("s-"+c.perm.String(), strings.NewReader("x"), c.perm, nil)
		syscall.Umask(old)
		if err != nil || err2 != nil || err3 != nil {
			t.Fatal(err, err2, err3)
		}
		if fi, _ := os.Stat(filepath.Join(staged.stage.tmp, "s-"+c.perm.String())); fi.Mode().Perm() != c.perm {
			t.Errorf("umask %o: the staged file has mode %o, want %o", c.umask, fi.Mode().Perm(), c.perm)
		}
		for _, name := range []string{"f", "g"} {
			if fi, _ := os.Stat(filepath.Join(dir, name)); fi.Mode().Perm() != c.perm {
				t.Errorf("umask %o: %s has mode %o, want %o", c.umask, name, fi.Mode().Perm(), c.perm)
			}
		}
	}
}
