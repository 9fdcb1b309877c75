package mirror

import (
	"context"
	"errors"
	"maps"
	"slices"
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
// every other upload of the sync has landed, and a game's are not uploaded
// at all when one of its other uploads failed: the server reloads a game
// when its files change, and must never find new code beside half of the
// files it expects. Held to the end, the code files of every game go
// together, in one batch where the remote takes batches: the last request
// of the uploads, which can bring back the server's tree for the check.
type uploadQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	ready   []Upload            // by size, biggest first
	held    map[string][]Upload // game -> its code files, waiting
	pending int                 // other uploads not yet landed
	failed  map[string]bool     // game -> one of its uploads failed
	left    int                 // uploads not yet handed out
	running int                 // uploads handed out and not yet done
	stopped bool
}

func newUploadQueue(uploads []Upload) *uploadQueue {
	q := &uploadQueue{held: map[string][]Upload{}, failed: map[string]bool{}, left: len(uploads)}
	q.cond = sync.NewCond(&q.mu)
	for _, u := range uploads {
		if lastInGame(u.Path) {
			g := gameOf(u.Path)
			q.held[g] = append(q.held[g], u)
			continue
		}
		q.pending++
		q.ready = append(q.ready, u)
	}
	q.releaseCode()
	q.sort()
	return q
}

// releaseCode makes the held code files ready once no other upload is
// pending, and returns those of games with a failed upload: held back for
// good. q.mu is held (or q is new).
func (q *uploadQueue) releaseCode() (heldBack []Upload) {
	if q.pending > 0 {
		return nil
	}
	for _, g := range slices.Sorted(maps.Keys(q.held)) {
		if q.failed[g] {
			q.left -= len(q.held[g])
			heldBack = append(heldBack, q.held[g]...)
		} else {
			q.ready = append(q.ready, q.held[g]...)
		}
		delete(q.held, g)
	}
	return heldBack
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

// Batch limits, when the remote takes many files in one request: files up
// to batchFileMax are sent together, up to batchFiles and batchBytes a
// request; bigger files go alone.
const (
	batchFileMax = 1 << 20
	batchFiles   = 128
	batchBytes   = 4 << 20
)

// uploadRequests is about how many requests uploads of these sizes take:
// one each, or in batches the big ones alone and the small ones together.
// It is how many connections are worth opening ahead of them.
func uploadRequests(sizes []int64, batch bool) int {
	if !batch {
		return len(sizes)
	}
	n, small := 0, 0
	var smallBytes int64
	for _, s := range sizes {
		if s > batchFileMax {
			n++
		} else {
			small++
			smallBytes += s
		}
	}
	if small > 0 {
		n += max((small+batchFiles-1)/batchFiles, int((smallBytes+batchBytes-1)/batchBytes))
	}
	return n
}

// next blocks until uploads are ready for a worker (big: from the biggest
// end) and returns one, or with batch set, as many small ones as a batch
// takes; it returns none when nothing is left. last reports that these are
// the sync's last uploads and none other is in flight: the code files,
// which then go in one batch whatever its size.
func (q *uploadQueue) next(big, batch bool) (out []Upload, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) == 0 && q.left > 0 && !q.stopped {
		q.cond.Wait()
	}
	if q.stopped || len(q.ready) == 0 {
		return nil, false
	}
	if batch && q.pending == 0 && q.running == 0 && len(q.ready) == q.left {
		out, q.ready, q.left = q.ready, nil, 0
		q.running += len(out)
		return out, true
	}
	var bytes int64
	for len(q.ready) > 0 {
		i := len(q.ready) - 1
		if big {
			i = 0
		}
		u := q.ready[i]
		if len(out) > 0 && (!batch || u.Size > batchFileMax || len(out) == batchFiles || bytes+u.Size > batchBytes) {
			break
		}
		q.ready = slices.Delete(q.ready, i, i+1)
		q.left--
		out = append(out, u)
		bytes += u.Size
		if !batch || u.Size > batchFileMax {
			break
		}
	}
	q.running += len(out)
	return out, false
}

// done records how an upload ended. When it was the last other upload to
// land, the code files become ready, and those of games with a failed
// upload are returned, to be reported as held back.
func (q *uploadQueue) done(u Upload, err error) (heldBack []Upload) {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.cond.Broadcast()
	q.running--
	if lastInGame(u.Path) {
		return nil
	}
	if err != nil {
		q.failed[gameOf(u.Path)] = true
	}
	if q.pending--; q.pending > 0 {
		return nil
	}
	heldBack = q.releaseCode()
	q.sort()
	return heldBack
}

// stop makes every worker return once its current upload ends.
func (q *uploadQueue) stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// runUploads uploads on jobs workers in the queue's order, calling put for
// each file, or, when putBatch is not nil, putBatch for every upload (the
// small ones several at once, a big one alone, last set for the batch that
// ends the uploads with nothing else in flight), and report for each result
// (held-back code files included), until all are done or ctx ends.
func runUploads(ctx context.Context, uploads []Upload, jobs int, put func(Upload) error,
	putBatch func(us []Upload, last bool) []error, report func(Upload, error)) {
	q := newUploadQueue(uploads)
	stop := context.AfterFunc(ctx, q.stop)
	defer stop()
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(uploads)); w++ {
		wg.Add(1)
		go func(big bool) {
			defer wg.Done()
			for {
				us, last := q.next(big, putBatch != nil)
				if len(us) == 0 {
					return
				}
				var errs []error
				if putBatch == nil {
					errs = []error{put(us[0])}
				} else {
					errs = putBatch(us, last)
				}
				for i, u := range us {
					report(u, errs[i])
					for _, h := range q.done(u, errs[i]) {
						report(h, ErrHeldBack)
					}
				}
			}
		}(w%2 == 0)
	}
	wg.Wait()
}
