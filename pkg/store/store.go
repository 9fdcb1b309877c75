package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"github.com/hoster-dev/hoster/pkg/filehash"
)

// isTemporary reports whether name is an in-flight upload's: pkg/atomicfile's
// naming. The tree skips such files, and clients can never address them.
func isTemporary(name string) bool {
	_, ok := atomicfile.TargetOf(name)
	return ok
}

// ErrTooLarge is returned by Write when the body exceeds the limit.
var ErrTooLarge = errors.New("upload exceeds the size limit")

// ErrNotWanted is returned by WriteWant when the body is not the sha256 it
// was written for.
var ErrNotWanted = errors.New("its bytes are not the sha256 asked for")

// Store is the games mirror rooted at one directory.
type Store struct {
	root *os.Root

	mu    sync.Mutex
	cache map[string]cached // rel path -> last hash and the stat it was taken at

	dirs dirCache // open handles on the folders uploads go to

	writes sync.WaitGroup // uploads in flight, waited for by Close
}

// Open opens (creating it if needed) the games root dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("opening the games root: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the games root: %w", err)
	}
	s := &Store{root: root, cache: map[string]cached{}}
	s.removeTemporaries()
	return s, nil
}

// removeTemporaries removes the upload temporaries a killed server left
// behind: regular files of the store's own naming, anywhere in the tree.
// Nothing else is touched, and a failure only leaves a file for the next
// start.
func (s *Store) removeTemporaries() {
	fs.WalkDir(s.root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: left for the next start
		}
		if e.Type().IsRegular() && isTemporary(e.Name()) {
			s.root.Remove(p)
		}
		return nil
	})
}

// Close waits for the uploads in flight (cut short by closing their
// connections, each removes its temporary file) and releases the root.
func (s *Store) Close() error {
	s.writes.Wait()
	s.dirs.closeAll()
	return s.root.Close()
}

// Write stores the bytes of body at rel (at least <domain>/<game>/<file>),
// creating parent directories and replacing any regular file there; a
// folder, a symlink or any other kind of file at rel is refused
// ([atomicfile.ErrNotRegular]). The body goes to a temporary file in the
// target's directory ([atomicfile.Pending]) that is renamed into place only
// once it is complete, so a reader sees the old file or the new one, never a
// part; a failed or cut upload leaves the old file as it was and removes the
// temporary. A body longer than limit bytes (when limit > 0) fails with
// ErrTooLarge.
//
// The file is not fsynced: the rename makes it visible atomically, and a
// crash may at worst lose the newest uploads, which the next sync sends again.
//
// The body is hashed as it is written, and the hash cached with the stamp of
// the file as renamed into place (stat'ed through the still open file, so a
// concurrent replacement of the path is a different inode and not trusted):
// the next tree request does not read the file again, and the hash is
// returned with the size.
func (s *Store) Write(rel string, body io.Reader, limit int64) (Written, error) {
	return s.write(rel, body, limit, "")
}

// WriteWant is Write for a body known by its sha256 (want, lowercase hex):
// one whose bytes are not want's is never renamed into place, and fails
// with ErrNotWanted. The hash Write takes anyway is the check: the body is
// read once.
func (s *Store) WriteWant(rel string, body io.Reader, want string) (Written, error) {
	return s.write(rel, body, 0, want)
}

func (s *Store) write(rel string, body io.Reader, limit int64, want string) (Written, error) {
	if _, err := checkDepth(rel, MinWriteDepth); err != nil {
		return Written{}, err
	}
	s.writes.Add(1)
	defer s.writes.Done()
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	d, err := s.dirs.get(s.root, dir)
	if err != nil {
		return Written{}, fmt.Errorf("opening the folder of %s: %w", rel, err)
	}
	defer func() { s.dirs.put(d) }() // d may be replaced below
	f, err := atomicfile.CreateIn(d.root, base, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// The folder was removed since its handle was opened: open it afresh.
		s.dirs.forget(d)
		fresh, ferr := s.dirs.get(s.root, dir)
		if ferr != nil {
			return Written{}, fmt.Errorf("opening the folder of %s: %w", rel, ferr)
		}
		s.dirs.put(d)
		d = fresh
		f, err = atomicfile.CreateIn(d.root, base, 0o644)
	}
	if err != nil {
		return Written{}, fmt.Errorf("writing %s: %w", rel, err)
	}
	defer f.Discard()
	src := body
	if limit > 0 {
		src = io.LimitReader(body, limit+1)
	}
	h := sha256.New()
	buf := copyBufs.Get().(*[]byte)
	n, err := io.CopyBuffer(io.MultiWriter(f, h), src, *buf)
	copyBufs.Put(buf)
	if err != nil {
		return Written{}, fmt.Errorf("writing %s: %w", rel, err)
	}
	if limit > 0 && n > limit {
		return Written{}, ErrTooLarge
	}
	w := Written{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	if want != "" && w.SHA256 != want {
		return Written{}, fmt.Errorf("writing %s: %w", rel, ErrNotWanted)
	}
	fi, err := f.Commit(false)
	if err != nil {
		return Written{}, fmt.Errorf("writing %s: %w", rel, err)
	}
	if fi == nil {
		return w, nil // the next tree request hashes it
	}
	if st, ok := filehash.StampOf(fi); ok {
		s.mu.Lock()
		s.cache[rel] = cached{stamp: st, hash: w.SHA256}
		s.mu.Unlock()
	}
	return w, nil
}

// Written is what Write wrote: the size and the sha256 (lowercase hex) of
// the bytes now at the path.
type Written struct {
	Size   int64
	SHA256 string
}

// copyBufs hold the buffers uploads are copied through: larger than io.Copy's
// 32 KiB, to make fewer write calls.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// Delete removes the file or the whole subtree at rel (at least
// <domain>/<game>). Deleting an absent path succeeds. A symlink is removed
// itself, never followed.
func (s *Store) Delete(rel string) error {
	if _, err := checkDepth(rel, MinDeleteDepth); err != nil {
		return err
	}
	err := s.root.RemoveAll(rel)
	s.dirs.drop(rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("deleting %s: %w", rel, err)
	}
	s.removeEmptyParents(rel)
	// Drop cache entries below rel: they can never validate again anyway, and
	// the cache should not grow with deleted games.
	s.mu.Lock()
	for k := range s.cache {
		if k == rel || strings.HasPrefix(k, rel+"/") {
			delete(s.cache, k)
		}
	}
	s.mu.Unlock()
	return nil
}

// removeEmptyParents removes the folders above rel that its deletion left
// empty, up to but not including the game folder: an emptied folder would
// stand in the way of a file of the same name. A folder that is not empty
// (or that an upload is writing into) is kept, and so is everything above it.
func (s *Store) removeEmptyParents(rel string) {
	for dir := path.Dir(rel); strings.Count(dir, "/") >= MinDeleteDepth; dir = path.Dir(dir) {
		if s.root.Remove(dir) != nil {
			return
		}
		s.dirs.drop(dir)
	}
}

// Change is one change a sync made to the games mirror: the file at Path
// written with the bytes of hash SHA256, or, when SHA256 is "", the file or
// the whole subtree at Path deleted.
type Change struct {
	Path   string
	SHA256 string
}

// Open opens the regular file at rel (at least <domain>/<game>/<file>) for
// reading, confined to its game's folder.
func (s *Store) Open(rel string) (*os.File, error) {
	segs, err := checkDepth(rel, MinWriteDepth)
	if err != nil {
		return nil, err
	}
	r, err := s.OpenGame(segs[0], segs[1])
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := r.Open(strings.Join(segs[2:], "/"))
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", rel, err)
	}
	return f, nil
}
