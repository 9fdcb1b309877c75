package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// cached is a hash together with the identity of the file it was computed
// from. The hash is reused only when all of these are unchanged: a rewrite
// that restores size and mtime still moves ctime, which cannot be set.
type cached struct {
	ino, size, mtime, ctime int64
	hash                    string
}

// stamp is the identity of a file as stat reports it.
type stamp struct{ ino, size, mtime, ctime int64 }

func stampOf(fi fs.FileInfo) (stamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{}, false
	}
	return stamp{
		ino:   int64(st.Ino),
		size:  st.Size,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}, true
}

// Tree returns every regular file under the games root, slash-separated and
// relative to it, mapped to the lowercase hex sha256 of its bytes, computed
// from disk now: each file is stat'ed, and hashed unless the cache holds its
// hash for exactly that inode, size, mtime and ctime. Hashing runs on all
// cores. Symlinks, in-flight uploads and anything that is not a regular file
// are left out; a file that vanishes during the walk is left out too.
func (s *Store) Tree() (map[string]string, error) {
	var paths []string
	err := fs.WalkDir(s.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // vanished or unreadable: not part of the tree
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), tempPrefix) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking the games root: %w", err)
	}

	hashes := make([]string, len(paths))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for i := range work {
				hashes[i] = s.hashFile(paths[i], buf)
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()

	tree := make(map[string]string, len(paths))
	for i, p := range paths {
		if hashes[i] != "" {
			tree[p] = hashes[i]
		}
	}
	return tree, nil
}

// hashFile returns the hash of rel, from the cache when its stamp is
// unchanged, or "" when it cannot be read. The stamp is taken from the open
// file before reading, so a change during the read moves ctime past it and is
// caught by the next request.
func (s *Store) hashFile(rel string, buf []byte) string {
	fi, err := s.root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	st, ok := stampOf(fi)
	if ok {
		s.mu.Lock()
		c, hit := s.cache[rel]
		s.mu.Unlock()
		if hit && c.ino == st.ino && c.size == st.size && c.mtime == st.mtime && c.ctime == st.ctime {
			return c.hash
		}
	}
	f, err := s.root.Open(rel)
	if err != nil {
		return ""
	}
	defer f.Close()
	ffi, err := f.Stat()
	if err != nil || !ffi.Mode().IsRegular() {
		return ""
	}
	st, ok = stampOf(ffi)
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, buf); err != nil {
		return ""
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if ok {
		s.mu.Lock()
		s.cache[rel] = cached{ino: st.ino, size: st.size, mtime: st.mtime, ctime: st.ctime, hash: sum}
		s.mu.Unlock()
	}
	return sum
}
