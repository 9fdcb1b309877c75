package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hoster-dev/hoster/pkg/api"
)

// unreachableAfter is how many transfers in a row may fail for want of a
// server (no answer, or a 5xx) before no further transfer starts.
const unreachableAfter = 3

// unreachable reports whether err says the server is not there to answer:
// no answer at all, or a server error, after the transfer's own retries
// (the Remote's errors say so with an Unreachable method, as
// *apiclient.Error does). A full disk is an answer, not an absence.
func unreachable(err error) bool {
	var e interface{ Unreachable() bool }
	return errors.As(err, &e) && e.Unreachable() && !outOfSpace(err)
}

// outOfSpace reports whether err is the server saying its disk is full: by
// the machine-readable cause of its answer (api.CauseNoSpace; the Remote's
// errors tell it with an OutOfSpace method, as *apiclient.Error does), or,
// from a server that tells no cause (hoster-server before it, or another
// server of the contract), by the system's words for ENOSPC in its message.
func outOfSpace(err error) bool {
	var e interface{ OutOfSpace() bool }
	if errors.As(err, &e) && e.OutOfSpace() {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "no space left on device")
}

// transfers runs do(0..n-1), jobs at a time, and returns the indices never
// started because the server looked gone. After unreachableAfter failures
// in a row that say the server is unreachable, no further transfer starts;
// once those running are done, check asks the server once more: if it
// answers, the rest go on, else they are returned. A dead server so ends a
// sync within a few retries, not one transfer's retries per file.
func transfers(ctx context.Context, jobs, n int, check func() error, do func(i int) error) []int {
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	for len(pending) > 0 {
		var streak atomic.Int32
		var mu sync.Mutex
		var skipped []int
		parallel(ctx, jobs, len(pending), func(k int) {
			i := pending[k]
			if streak.Load() >= unreachableAfter {
				mu.Lock()
				skipped = append(skipped, i)
				mu.Unlock()
				return
			}
			if err := do(i); unreachable(err) {
				streak.Add(1)
			} else {
				streak.Store(0)
			}
		})
		if len(skipped) == 0 || ctx.Err() != nil {
			return nil
		}
		sort.Ints(skipped)
		if check() != nil {
			return skipped
		}
		// The server answers again; every round has run at least
		// unreachableAfter transfers, so this ends.
		pending = skipped
	}
	return nil
}

// sentHashes records the sha256 of each upload as it is sent: the bytes
// the server received, whatever the file holds by the time the sync
// checks the server's tree.
type sentHashes struct {
	mu   sync.Mutex
	sums map[string]string
}

// opener opens u's file for one attempt of its upload, hashing what is
// read; the hash is recorded once all u.Size bytes are read (the server can
// have answered only after that).
func (s *sentHashes) opener(u Upload) func() (io.ReadCloser, error) {
	if u.Size == 0 {
		s.set(u.Path, sha256.New())
	}
	return func() (io.ReadCloser, error) {
		f, err := os.Open(u.Abs)
		if err != nil {
			return nil, err
		}
		return &hashingReader{f: f, h: sha256.New(), left: u.Size, done: func(h hash.Hash) { s.set(u.Path, h) }}, nil
	}
}

// wrote records the hash the server reported for u's upload; a server
// that reports none has the file hashed here, as it is now.
func (s *sentHashes) wrote(u Upload, sum string) {
	if sum == "" {
		h := sha256.New()
		if f, err := os.Open(u.Abs); err == nil {
			io.Copy(h, f)
			f.Close()
		}
		s.set(u.Path, h) // unreadable: the check names the file
		return
	}
	s.put(u.Path, sum)
}

func (s *sentHashes) set(path string, h hash.Hash) { s.put(path, hex.EncodeToString(h.Sum(nil))) }

func (s *sentHashes) put(path, sum string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sums == nil {
		s.sums = map[string]string{}
	}
	s.sums[path] = sum
}

func (s *sentHashes) get(path string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.sums[path]
	return h, ok
}

type hashingReader struct {
	f    *os.File
	h    hash.Hash
	left int64
	done func(hash.Hash)
}

func (r *hashingReader) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if n > 0 && r.left > 0 {
		m := min(int64(n), r.left)
		r.h.Write(b[:m])
		r.left -= m
		if r.left == 0 {
			r.done(r.h)
		}
	}
	return n, err
}

func (r *hashingReader) Close() error { return r.f.Close() }

// maxNamed is how many differences a check of the server's tree names one
// by one; the count covers them all.
const maxNamed = 20

// verify compares, for the games this sync covers, what the server holds
// after the sync (tree, as the uploads' last batch brought it back, or read
// once more when nil) with what the sync left there: each local file as
// sent or found unchanged, and no managed file besides. Paths
// under excused (failed, skipped or refused) are not compared. Each
// difference is a failure, up to maxNamed of them named; the count of all
// is returned.
func verify(ctx context.Context, remote Remote, tree api.Tree, local *Local, plan Plan, sent *sentHashes, excused func(string) bool) (int, []Failure, error) {
	if tree == nil {
		var err error
		if tree, err = remote.Tree(ctx); err != nil {
			return 0, nil, fmt.Errorf("checking the server's tree after the sync: %w", err)
		}
	}
	games := map[string]bool{}
	for _, g := range local.Games {
		games[g] = true
	}
	for _, d := range plan.Deletes {
		if strings.Count(d.Path, "/") == 1 {
			games[d.Path] = true // a whole game deleted
		}
	}
	var diffs []Failure
	for _, f := range local.Files {
		if excused(f.Path) {
			continue
		}
		want, ok := sent.get(f.Path)
		if !ok {
			want = f.Hash
		}
		switch got, has := tree[f.Path]; {
		case !has:
			diffs = append(diffs, Failure{Op: "check", Path: f.Path, Error: "the server no longer holds it"})
		case got != want:
			diffs = append(diffs, Failure{Op: "check", Path: f.Path, Error: "the server holds other bytes than this sync sent"})
		}
	}
	for rp := range tree {
		if _, mine := local.Files[rp]; mine || !games[gameOf(rp)] || !Managed(rp) || excused(rp) {
			continue
		}
		diffs = append(diffs, Failure{Op: "check", Path: rp, Error: "the server holds a file this sync did not push"})
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i].Path < diffs[j].Path })
	n := len(diffs)
	if n > maxNamed {
		diffs = diffs[:maxNamed]
	}
	return n, diffs, nil
}

// under returns whether p is one of the paths in set or below one of them.
func under(set map[string]bool, p string) bool {
	if len(set) == 0 {
		return false
	}
	for i := len(p); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		if set[p[:i]] {
			return true
		}
	}
	return false
}

// errNotSent marks a transfer not started because the server had stopped
// answering: counted in the summary, not a failure of its own.
var errNotSent = errors.New("not sent: the server stopped answering")

// gate stops the transfers of one phase once the server looks gone: after
// unreachableAfter failures in a row that say so, the server is asked once
// more (one caller asks; the others wait for its answer); if it answers, the
// transfers go on, else every later one is not sent.
type gate struct {
	check  func() error
	mu     sync.Mutex
	streak int
	shut   bool
}

func newGate(check func() error) *gate { return &gate{check: check} }

// closed reports whether the server was found gone.
func (g *gate) closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.shut && g.streak >= unreachableAfter {
		if g.check() != nil {
			g.shut = true
		} else {
			g.streak = 0
		}
	}
	return g.shut
}

// record counts a transfer's outcome towards the streak.
func (g *gate) record(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if unreachable(err) {
		g.streak++
	} else {
		g.streak = 0
	}
}

// cause is err without the operation the Remote put in front of it, when
// the Remote's errors say it (as *apiclient.Error does with Cause): the
// caller names the path itself, once.
func cause(err error) string {
	var c interface{ Cause() string }
	if errors.As(err, &c) {
		return c.Cause()
	}
	return err.Error()
}
