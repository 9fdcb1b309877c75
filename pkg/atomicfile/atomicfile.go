// Package atomicfile writes a whole file so that a reader, or a crash, sees
// the old file or the new one and never a part (tailscale's atomicfile is
// the model). The data goes to a temporary file in the target's folder, is
// synced to disk, and is renamed (or, for [CreateFile], linked) into place;
// the folder is synced so the new name lasts. A target that exists and is
// not a regular file (a folder, a symlink, a device) is refused, and on any
// failure the temporary file is removed and the target left as it was.
//
// [WriteFileUnsynced] skips the two syncs, for output that is made again
// from its sources (the generator's): a crash may lose it, never leave half
// of it, and the syncs would double the generator's time. [Copy] writes
// what a reader gives, for downloads, and keeps the file only if its size
// is accepted.
//
// A temporary file is named "." + the target's name + ".tmp-" + digits
// ([TargetOf] reads such a name back), so a crash's leftovers can be found.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// ErrNotRegular is wrapped by the error for a target that is not a regular
// file.
var ErrNotRegular = errors.New("it exists and is not a regular file")

// WriteFile writes data to path with mode perm, replacing any regular file
// there.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	_, err := write(path, bytes.NewReader(data), perm, os.Rename, true, nil)
	return err
}

// WriteFileUnsynced is WriteFile without syncing the file or its folder.
func WriteFileUnsynced(path string, data []byte, perm fs.FileMode) error {
	_, err := write(path, bytes.NewReader(data), perm, os.Rename, false, nil)
	return err
}

// Copy writes what r gives to path, unsynced, and puts it in place only if
// accept (which may be nil) takes the number of bytes received: a cut-off
// download leaves the target as it was. It returns the bytes received.
func Copy(path string, r io.Reader, perm fs.FileMode, accept func(n int64) error) (int64, error) {
	return write(path, r, perm, os.Rename, false, accept)
}

// tempName is a temporary file's name: "." + target + ".tmp-" + digits.
var tempName = regexp.MustCompile(`^\.(.+)\.tmp-\d+$`)

// TargetOf returns the name of the file a temporary file of this package
// was to become, and whether name is one.
func TargetOf(name string) (string, bool) {
	m := tempName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// CreateFile writes data to path with mode perm only if nothing is there: it
// fails with an error wrapping [fs.ErrExist] otherwise, even against another
// writer racing it.
func CreateFile(path string, data []byte, perm fs.FileMode) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("writing %s: %w", path, fs.ErrExist)
	}
	_, err := write(path, bytes.NewReader(data), perm, os.Link, true, nil) // a link never replaces
	return err
}

func write(path string, r io.Reader, perm fs.FileMode, place func(tmp, path string) error, durable bool, accept func(int64) error) (n int64, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return 0, ErrNotRegular
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after a rename, nothing; after a link, the extra name
	n, err = io.Copy(tmp, r)
	if err == nil && accept != nil {
		err = accept(n)
	}
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	if err := place(tmp.Name(), path); err != nil || !durable {
		return n, err
	}
	return n, syncDir(dir)
}

// syncDir makes a folder's entries last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
