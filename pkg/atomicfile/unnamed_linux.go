package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noUnnamed is set once an unnamed file could not be made or linked here:
// the files after it are named from the start.
var noUnnamed atomic.Bool

// procFD is where a process's open files are named, which linking an
// unnamed file goes through (linkat with AT_EMPTY_PATH needs a capability
// an ordinary user lacks).
var procFD = "/proc/self/fd/"

// createUnnamed opens a file with no name (O_TMPFILE) in dir, a folder
// inside root, and dir itself, to link the file there once it is
// complete: a crash leaves nothing behind, and putting it in place is one
// link, not a create and a rename of a named temporary. Both are nil where
// the file system offers no unnamed files, or dir cannot be opened (the
// named temporary then tells why).
func createUnnamed(root *os.Root, dir string, perm fs.FileMode) (f, folder *os.File) {
	if noUnnamed.Load() {
		return nil, nil
	}
	folder, err := root.Open(dir)
	if err != nil {
		return nil, nil
	}
	f, err = root.OpenFile(dir, os.O_RDWR|unix.O_TMPFILE, perm)
	if err != nil {
		folder.Close()
		if !errors.Is(err, fs.ErrNotExist) {
			noUnnamed.Store(true) // not offered here: not asked again
		}
		return nil, nil
	}
	return f, folder
}

// linkAt gives the unnamed file f the name name in folder; it fails with
// an error wrapping fs.ErrExist where something has that name.
func linkAt(f, folder *os.File, name string) error {
	return unix.Linkat(unix.AT_FDCWD, procFD+strconv.Itoa(int(f.Fd())), int(folder.Fd()), name, unix.AT_SYMLINK_FOLLOW)
}
