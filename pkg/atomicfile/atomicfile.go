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
// of it, and the syncs would double the generator's time.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is wrapped by the error for a target that is not a regular
// file.
var ErrNotRegular = errors.New("it exists and is not a regular file")

// WriteFile writes data to path with mode perm, replacing any regular file
// there.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, os.Rename, true)
}

// WriteFileUnsynced is WriteFile without syncing the file or its folder.
func WriteFileUnsynced(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, os.Rename, false)
}

// CreateFile writes data to path with mode perm only if nothing is there: it
// fails with an error wrapping [fs.ErrExist] otherwise, even against another
// writer racing it.
func CreateFile(path string, data []byte, perm fs.FileMode) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("writing %s: %w", path, fs.ErrExist)
	}
	return write(path, data, perm, os.Link, true) // a link never replaces
}

func write(path string, data []byte, perm fs.FileMode, place func(tmp, path string) error, durable bool) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return ErrNotRegular
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a rename, nothing; after a link, the extra name
	_, err = tmp.Write(data)
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
		return err
	}
	if err := place(tmp.Name(), path); err != nil || !durable {
		return err
	}
	return syncDir(dir)
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
