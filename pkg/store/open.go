package store

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/hoster-dev/hoster/pkg/filehash"
)

// OpenGame opens the folder of one game, <domain>/<game>, as its own
// [os.Root]: what is opened through it cannot leave the game's folder, by
// any path or symlink.
func (s *Store) OpenGame(domain, game string) (*os.Root, error) {
	rel := domain + "/" + game
	if _, err := checkDepth(rel, 2); err != nil {
		return nil, err
	}
	r, err := s.root.OpenRoot(rel)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", rel, err)
	}
	return r, nil
}

// HashOf returns the lowercase hex sha256 of f, a regular file open at rel
// (relative to the games root) whose stat is fi. The cache answers when it
// holds a hash for exactly that inode, size, mtime and ctime (an upload
// cached its own as it was written); otherwise f is read once, from offset
// 0 without moving its offset, and the hash cached for the next caller.
func (s *Store) HashOf(rel string, f *os.File, fi os.FileInfo) (string, error) {
	if sum, ok := s.cachedHash(rel, fi); ok {
		return sum, nil
	}
	x := hashers.Get().(*filehash.Hasher)
	sum, _, err := x.Sum(io.NewSectionReader(f, 0, fi.Size()))
	hashers.Put(x)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", rel, err)
	}
	if st, ok := filehash.StampOf(fi); ok {
		s.mu.Lock()
		s.cache[rel] = cached{stamp: st, hash: sum}
		s.mu.Unlock()
	}
	return sum, nil
}

var hashers = sync.Pool{New: func() any { return new(filehash.Hasher) }}
