package atomicfile

import (
	"io"
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

// lockStage opens the hidden folder tmp and locks it (tryLock); nil where
// it is locked already (or cannot be opened). Closing it unlocks it.
func lockStage(tmp string) *os.File {
	d, err := os.Open(tmp)
	if err != nil {
		return nil
	}
	if !tryLock(d) {
		d.Close()
		return nil
	}
	return d
}

// tryLock locks the folder d (flock), so that another run's StageFolder
// leaves it, and reports whether it could. The lock goes when d is closed,
// or its process killed.
func tryLock(d *os.File) bool { return unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil }

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

// plainAt: copyPlainAt writes through the folder's handle here.
const plainAt = true

// copyPlainAt is copyPlain for name, a name in the folder dir: created
// with openat (never following a symlink, never over a file: one left
// there is removed first), written with buf's help, closed; removed
// unless accept takes the bytes received. The mode is set to perm unless
// exact holds perm already.
func copyPlainAt(dir *os.File, name string, r io.Reader, buf []byte, perm fs.FileMode, accept func(int64) error, exact *atomic.Uint32) (n int64, err error) {
	dfd := int(dir.Fd())
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dfd, name, flags, uint32(perm.Perm()))
	if err == unix.EEXIST {
		if err = unix.Unlinkat(dfd, name, 0); err == nil {
			fd, err = unix.Openat(dfd, name, flags, uint32(perm.Perm()))
		}
	}
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	n, err = io.CopyBuffer(fdWriter(fd), r, buf)
	if err == nil && accept != nil {
		err = accept(n)
	}
	if err == nil && exact.Load() != uint32(perm) {
		err = setModeFD(fd, perm, exact)
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = &fs.PathError{Op: "close", Path: name, Err: cerr}
	}
	if err != nil {
		unix.Unlinkat(dfd, name, 0)
	}
	return n, err
}

// setModeFD gives the file fd the mode perm, and records in exact that
// the umask left perm as it is where it did.
func setModeFD(fd int, perm fs.FileMode, exact *atomic.Uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && perm == perm.Perm() && fs.FileMode(st.Mode&0o777) == perm {
		exact.Store(uint32(perm))
		return nil
	}
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return os.NewSyscallError("fchmod", err)
	}
	return nil
}

// fdWriter writes to a file descriptor.
type fdWriter int

func (w fdWriter) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Write(int(w), b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, os.NewSyscallError("write", err)
		}
		n += m
	}
	return n, nil
}
