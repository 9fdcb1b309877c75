package atomicfile

import (
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
// unnamed file goes through where linkat with AT_EMPTY_PATH is refused (it
// needs a capability an ordinary user lacks before Linux 6.10).
var procFD = "/proc/self/fd/"

// noEmptyPath is set once linkat refused AT_EMPTY_PATH: the links after it
// go through procFD.
var noEmptyPath atomic.Bool

// unnamedOK reports whether files are written with no name until complete.
func unnamedOK() bool { return !noUnnamed.Load() }

// createUnnamed opens a file with no name (O_TMPFILE) in folder, to link
// it there once it is complete: a crash leaves nothing behind, and putting
// it in place is one link, not a create and a rename of a named temporary.
// It is nil where the file system offers no unnamed files, or folder is.
func createUnnamed(folder *os.File, perm fs.FileMode) *os.File {
	if folder == nil {
		return nil
	}
	fd, err := unix.Openat(int(folder.Fd()), ".", unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		noUnnamed.Store(true) // not offered here: not asked again
		return nil
	}
	return os.NewFile(uintptr(fd), folder.Name())
}

// linkAt gives the unnamed file f the name name in folder; it fails with
// an error wrapping fs.ErrExist where something has that name.
func linkAt(f, folder *os.File, name string) error {
	if !noEmptyPath.Load() {
		err := unix.Linkat(int(f.Fd()), "", int(folder.Fd()), name, unix.AT_EMPTY_PATH)
		if err != unix.ENOENT && err != unix.EPERM && err != unix.EINVAL {
			return err // done, or failed as the other way would
		}
		noEmptyPath.Store(true)
	}
	return unix.Linkat(unix.AT_FDCWD, procFD+strconv.Itoa(int(f.Fd())), int(folder.Fd()), name, unix.AT_SYMLINK_FOLLOW)
}

// locksStages: a staged folder is locked while it is written (lockStage).
const locksStages = true

// lockStage opens the hidden folder tmp and locks it (flock), so that
// another run's StageFolder leaves it; nil where it is locked already (or
// cannot be opened). Closing it unlocks it; a killed run's lock goes with
// it.
func lockStage(tmp string) *os.File {
	d, err := os.Open(tmp)
	if err != nil {
		return nil
	}
	if unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		d.Close()
		return nil
	}
	return d
}

// renameNoReplace renames old to new, failing with an error wrapping
// fs.ErrExist where something is at new.
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return renameIfFree(old, new) // not offered by this file system
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
	}
	return nil
}
