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
// takes bits away (a chmod) and where it takes none (none needed).
func TestModeWhateverTheUmask(t *testing.T) {
	dir := t.TempDir()
	folder := openFolder(t, dir)
	for _, c := range []struct {
		umask int
		perm  os.FileMode
	}{{0o077, 0o644}, {0o022, 0o644}, {0, 0o640}, {0o022, 0o666}} {
		old := syscall.Umask(c.umask)
		_, err := folder.Copy("f", strings.NewReader("x"), c.perm, nil)
		_, err2 := Copy(filepath.Join(dir, "g"), strings.NewReader("x"), c.perm, nil)
		syscall.Umask(old)
		if err != nil || err2 != nil {
			t.Fatal(err, err2)
		}
		for _, name := range []string{"f", "g"} {
			if fi, _ := os.Stat(filepath.Join(dir, name)); fi.Mode().Perm() != c.perm {
				t.Errorf("umask %o: %s has mode %o, want %o", c.umask, name, fi.Mode().Perm(), c.perm)
			}
		}
	}
}
