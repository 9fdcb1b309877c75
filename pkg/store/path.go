// Package store is the games mirror on the server's disk: every read, write
// and delete under {hosting_root}/hoster-games goes through it, confined by an
// [os.Root] so that no path and no symlink planted in the tree can reach a byte
// outside. Writes are atomic (a temporary file beside the target, renamed into
// place, by pkg/atomicfile); the tree of sha256 hashes is computed from disk on every request,
// with a cache that is trusted only while each file's inode, size, mtime and
// ctime are unchanged to the nanosecond.
package store

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrInvalidPath is returned for a path that is not a clean, relative,
// slash-separated path deep enough for the operation.
var ErrInvalidPath = errors.New("invalid path")

// Minimum depths: a write names a file inside a game (<domain>/<game>/<file>);
// a delete names a game or something inside one (<domain>/<game>).
const (
	MinWriteDepth  = 3
	MinDeleteDepth = 2
)

// MaxDepth is the most segments a path may have. It keeps the tree walk's
// open directories bounded, and is far beyond any real game.
const MaxDepth = 256

// CleanPath checks that p is a path relative to the games root in canonical
// form and returns its segments: valid UTF-8 (the tree is JSON, which could
// only carry another name in its place), not empty, not absolute, no backslash, no NUL,
// no empty, "." or ".." segment, at most MaxDepth segments. Nothing is normalised: a path that would need
// normalising is refused, so what is checked is exactly what is used.
func CleanPath(p string) ([]string, error) {
	if p == "" || !utf8.ValidString(p) || strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/") {
		return nil, ErrInvalidPath
	}
	segs := strings.Split(p, "/")
	if len(segs) > MaxDepth {
		return nil, ErrInvalidPath
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return nil, ErrInvalidPath
		}
	}
	return segs, nil
}

// checkDepth validates p with CleanPath and requires at least min segments.
func checkDepth(p string, min int) ([]string, error) {
	segs, err := CleanPath(p)
	if err != nil {
		return nil, err
	}
	if len(segs) < min {
		return nil, ErrInvalidPath
	}
	// The server's own temporary files are never addressed by a client.
	if isTemporary(segs[len(segs)-1]) {
		return nil, ErrInvalidPath
	}
	return segs, nil
}

// GameOf returns the <domain>/<game> a valid path of depth two or more
// belongs to.
func GameOf(p string) (domain, game string, ok bool) {
	segs, err := CleanPath(p)
	if err != nil || len(segs) < 2 {
		return "", "", false
	}
	return segs[0], segs[1], true
}
