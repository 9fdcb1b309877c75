package mirror

import (
	"context"
	"errors"
	"sort"
	"sync"
)

// ErrHeldBack is the failure of a game's code file that was not uploaded
// because another upload of the same game failed.
var ErrHeldBack = errors.New("not uploaded: another file of this game failed, so its config and module were held back " +
	"and the server keeps running its previous code")

// uploadQueue hands out a plan's uploads to the transfer workers.
//
// Order: the files ready to go are kept by size. Half of the workers take
// the biggest, so the long transfers start first and none begins last; the
// other half take the smallest, so a small file never waits behind a big
// one and the many small ones keep their round trips overlapped.
//
// A game's code files (hoster-game.json, hoster.server.js) are held until
// every other upload of that game has landed, and are not uploaded at all
// when one of them failed: the server reloads a game when its files change,
// and must never find new code beside half of the files it expects.
type uploadQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	ready   []Upload            // by size, biggest first
	held    map[string][]Upload // game -> its code files, waiting
	pending map[string]int      // game -> its other uploads not yet landed
	failed  map[string]bool     // game -> one of its uploads failed
	left    int                 // uploads not yet handed out
	stopped bool
}

func newUploadQueue(uploads []Upload) *uploadQueue {
	q := &uploadQueue{held: map[string][]Upload{}, pending: map[string]int{}, failed: map[string]bool{}, left: len(uploads)}
	q.cond = sync.NewCond(&q.mu)
	for _, u := range uploads {
		g := gameOf(u.Path)
		if lastInGame(u.Path) {
			q.held[g] = append(q.held[g], u)
			continue
		}
		q.pending[g]++
		q.ready = append(q.ready, u)
	}
	for g := range q.held {
		if q.pending[g] == 0 {
			q.ready = append(q.ready, q.held[g]...)
			delete(q.held, g)
		}
	}
	q.sort()
	return q
}

func (q *uploadQueue) sort() {
	sort.SliceStable(q.ready, func(i, j int) bool {
		a, b := q.ready[i], q.ready[j]
		if a.Size != b.Size {
			return a.Size > b.Size
		}
		return a.Path < b.Path
	})
}

// next blocks until an upload is ready for a worker (big: from the biggest
// end) and returns it, or returns false when nothing is left.
func (q *uploadQueue) next(big bool) (Upload, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) == 0 && q.left > 0 && !q.stopped {
		q.cond.Wait()
	}
	if len(q.ready) == 0 || q.stopped {
		return Upload{}, false
	}
	var u Upload
	if big {
		u, q.ready = q.ready[0], q.ready[1:]
	} else {
		u, q.ready = q.ready[len(q.ready)-1], q.ready[:len(q.ready)-1]
	}
	q.left--
	return u, true
}

// done records how an upload ended. When it was a game's last other upload,
// the game's code files become ready, or, if any upload of the game failed,
// are returned to be reported as held back.
func (q *uploadQueue) done(u Upload, err error) (heldBack []Upload) {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.cond.Broadcast()
	if lastInGame(u.Path) {
		return nil
	}
	g := gameOf(u.Path)
	if err != nil {
		q.failed[g] = true
	}
	if q.pending[g]--; q.pending[g] > 0 {
		return nil
	}
	code := q.held[g]
	delete(q.held, g)
	if q.failed[g] {
		q.left -= len(code)
		return code
	}
	q.ready = append(q.ready, code...)
	q.sort()
	return nil
}

// stop makes every worker return once its current upload ends.
func (q *uploadQueue) stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// runUploads uploads on jobs workers in the queue's order, calling put for
// each and report for each result (held-back code files included), until
// all are done or ctx ends.
func runUploads(ctx context.Context, uploads []Upload, jobs int, put func(Upload) error, report func(Upload, error)) {
	q := newUploadQueue(uploads)
	stop := context.AfterFunc(ctx, q.stop)
	defer stop()
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(uploads)); w++ {
		wg.Add(1)
		go func(big bool) {
			defer wg.Done()
			for {
				u, ok := q.next(big)
				if !ok {
					return
				}
				err := put(u)
				report(u, err)
				for _, h := range q.done(u, err) {
					report(h, ErrHeldBack)
				}
			}
		}(w%2 == 0)
	}
	wg.Wait()
}
