package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"unicode/utf8"

	"github.com/hoster-dev/hoster/pkg/filehash"
)

// cached is a hash together with the stamp (inode, size, mtime, ctime) of
// the file it was computed from: it is reused only while the stamp is
// unchanged (filehash.Stamp says why that is enough).
type cached struct {
	stamp filehash.Stamp
	hash  string
}

// Tree returns every regular file under the games root, slash-separated and
// relative to it, mapped to the lowercase hex sha256 of its bytes, computed
// from disk now: each file is stat'ed, and hashed unless the cache holds its
// hash for exactly that inode, size, mtime and ctime. Hashing runs on all
// cores. Symlinks, in-flight uploads, anything that is not a regular file and
// names that are not UTF-8 (put there by hand: the API refuses them, and
// JSON could only carry another name in their place, which a client would
// then try to delete forever) are left out; a file that vanishes during the
// walk is left out too.
//
// Each directory is opened once, as its own os.Root, and its files are
// stat'ed relative to it: one fstatat per file, where a stat of the full path
// through the games root would open and close every parent directory again.
func (s *Store) Tree() (map[string]string, error) {
	return s.treeUnder(s.root, "", 0)
}

// TreeOf is Tree of one game's folder, <domain>/<game>: its files, keyed by
// their path under the games root. An absent game has an empty tree.
func (s *Store) TreeOf(domain, game string) (map[string]string, error) {
	r, err := s.OpenGame(domain, game)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return s.treeUnder(r, domain+"/"+game+"/", 2)
}

// treeUnder is Tree of the folder top, whose path under the games root is
// prefix and whose depth is depth.
func (s *Store) treeUnder(top *os.Root, prefix string, depth int) (map[string]string, error) {
	tree := map[string]string{}
	var misses []string
	var walk func(dir *os.Root, prefix string, depth int) error
	first := depth
	walk = func(dir *os.Root, prefix string, depth int) error {
		if depth >= MaxDepth {
			// Nothing this deep can be written; only a directory swapped for
			// a symlink to its parent mid-walk gets here.
			return nil
		}
		d, err := dir.Open(".")
		var entries []fs.DirEntry
		if err == nil {
			entries, err = d.ReadDir(-1)
			d.Close()
		}
		if err != nil {
			if depth == first {
				return err
			}
			return nil // unreadable or vanished below the root: not part of the tree
		}
		for _, e := range entries {
			if !utf8.ValidString(e.Name()) {
				continue // JSON cannot name it, nor a client address it
			}
			rel := prefix + e.Name()
			switch {
			case e.IsDir():
				sub, err := dir.OpenRoot(e.Name())
				if err != nil {
					continue // vanished or swapped: not part of the tree
				}
				err = walk(sub, rel+"/", depth+1)
				sub.Close()
				if err != nil {
					return err
				}
			case e.Type().IsRegular() && !isTemporary(e.Name()):
				fi, err := dir.Lstat(e.Name())
				if err != nil || !fi.Mode().IsRegular() {
					continue
				}
				if sum, ok := s.cachedHash(rel, fi); ok {
					tree[rel] = sum
				} else {
					misses = append(misses, rel)
				}
			}
		}
		return nil
	}
	if err := walk(top, prefix, depth); err != nil {
		return nil, fmt.Errorf("walking the games root: %w", err)
	}

	hashes := make([]string, len(misses))
	filehash.Each(len(misses), func(i int, x *filehash.Hasher) { hashes[i] = s.hashFile(misses[i], x) })
	for i, p := range misses {
		if hashes[i] != "" {
			tree[p] = hashes[i]
		}
	}
	return tree, nil
}

// cachedHash returns the cached hash of rel when fi shows the same file.
func (s *Store) cachedHash(rel string, fi fs.FileInfo) (string, bool) {
	st, ok := filehash.StampOf(fi)
	if !ok {
		return "", false
	}
	s.mu.Lock()
	c, hit := s.cache[rel]
	s.mu.Unlock()
	if hit && c.stamp == st {
		return c.hash, true
	}
	return "", false
}

// hashFile hashes rel and caches the result, or returns "" when it cannot be
// read. The stamp is taken from the open file before reading, so a change
// during the read moves ctime past it and is caught by the next request.
func (s *Store) hashFile(rel string, x *filehash.Hasher) string {
	f, err := s.root.Open(rel)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	st, ok := filehash.StampOf(fi)
	sum, _, err := x.Sum(f)
	if err != nil {
		return ""
	}
	if ok {
		s.mu.Lock()
		s.cache[rel] = cached{stamp: st, hash: sum}
		s.mu.Unlock()
	}
	return sum
}
