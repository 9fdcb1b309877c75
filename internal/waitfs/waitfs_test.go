package waitfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file written a few folders below a watched one, the folders made one
// by one while the wait runs, wakes it.
func TestWaitsThroughFoldersMadeMeanwhile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a", "b", "c")
	file := filepath.Join(dir, "f")
	go func() {
		for _, d := range []string{"a", "a/b", "a/b/c"} {
			os.Mkdir(filepath.Join(root, d), 0o755)
		}
		os.WriteFile(file, nil, 0o644)
		os.WriteFile(file, []byte("line\n"), 0o644) // written after it exists
	}()
	err := Until(dir, func() bool {
		b, _ := os.ReadFile(file)
		return len(b) > 0
	}, 10*time.Second) // a hang guard
	if err != nil {
		t.Fatal(err)
	}
}

// A condition that never holds ends with ErrTimeout.
func TestTimesOut(t *testing.T) {
	if err := Until(t.TempDir(), func() bool { return false }, time.Millisecond); err != ErrTimeout {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
}
