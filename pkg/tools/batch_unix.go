//go:build unix

package tools

import (
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// openEntry opens name, a file of the folder dir (its handle; root is the
// same folder), as a batch entry: straight through dir's descriptor where
// name is a file of it and not a symlink (an open, a stat, the reads and
// a close, none of an *os.File's further syscalls, which a batch of
// thousands of small files pays for each), through root as openIn opens
// it otherwise (a symlink is followed there as long as it stays inside).
func openEntry(dir *os.File, root *os.Root, name string) (entry, bool) {
	if dir == nil || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return openEntryIn(root, name)
	}
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ELOOP {
		return openEntryIn(root, name)
	}
	if err != nil {
		return entry{}, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return entry{}, false
	}
	return entry{ReaderAt: fdReader(fd), size: st.Size, close: func() error { return unix.Close(fd) }}, true
}

// fdReader reads a file descriptor at offsets.
type fdReader int

func (r fdReader) ReadAt(b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(int(r), b, off)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, os.NewSyscallError("pread", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
