package mirror

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
)

// The transfer engine both directions share: a sync's uploads (runUploads)
// and a pull's fetches (runFetches) are items of a queue that jobs workers
// take from, how many following the link (InFlight), each request tried
// again under the client's one retry policy.
//
// Order: the items ready to go are kept by size. Half of the workers take
// the biggest, so the long transfers start first and none begins last; the
// other half take the smallest, so a small file never waits behind a big
// one and the many small ones keep their round trips overlapped. Where the
// remote takes many files in one request (the batch upload, the batch
// download), a worker takes as many small items as a batch holds.

// kind tells the engine what it needs of an item.
type kind[T any] struct {
	size func(T) int64
	name func(T) string // orders items of one size
	// held, when set, names the group an item is held back for (ok):
	// it goes only once every item not held has landed, and not at all
	// when one of its group's items failed (a sync's code files).
	held func(T) (group string, ok bool)
	// alone, when set, keeps an item out of batches.
	alone func(T) bool
}

// queue hands out the items to the workers.
type queue[T any] struct {
	k       kind[T]
	mu      sync.Mutex
	cond    *sync.Cond
	ready   []T            // by size, biggest first
	held    map[string][]T // group -> its held items, waiting
	pending int            // items not held, not yet landed
	failed  map[string]bool
	left    int // items not yet handed out
	running int // items handed out and not yet done
	stopped bool
	// open: more items may come (add); the held ones wait for it to end
	// (close), and the workers wait for items rather than return.
	open bool
}

func newQueue[T any](k kind[T]) *queue[T] {
	q := &queue[T]{k: k, held: map[string][]T{}, failed: map[string]bool{}, open: true}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// add puts items in the queue, in its order with those there: sorted on
// their own and merged in, so that a pull adding a folder at a time does
// not sort all the files it has yet to fetch again each time.
func (q *queue[T]) add(items []T) {
	var fresh []T
	for _, it := range items {
		if _, ok := q.group(it); !ok {
			fresh = append(fresh, it)
		}
	}
	sort.SliceStable(fresh, func(i, j int) bool { return q.before(fresh[i], fresh[j]) })
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.cond.Broadcast()
	q.left += len(items)
	for _, it := range items {
		if g, ok := q.group(it); ok {
			q.held[g] = append(q.held[g], it)
		}
	}
	q.pending += len(fresh)
	merged := make([]T, 0, len(q.ready)+len(fresh))
	i := 0
	for _, it := range q.ready {
		for ; i < len(fresh) && q.before(fresh[i], it); i++ {
			merged = append(merged, fresh[i])
		}
		merged = append(merged, it)
	}
	q.ready = append(merged, fresh[i:]...)
}

// close says no item comes after those added, and returns those held back
// for good, if every other item landed already.
func (q *queue[T]) close() (heldBack []T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.cond.Broadcast()
	q.open = false
	heldBack = q.release()
	q.sort()
	return heldBack
}

func (q *queue[T]) group(it T) (string, bool) {
	if q.k.held == nil {
		return "", false
	}
	return q.k.held(it)
}

// release makes the held items ready once no other item is pending or
// may still come, and returns those of groups with a failure: held back
// for good. q.mu is held.
func (q *queue[T]) release() (heldBack []T) {
	if q.pending > 0 || q.open {
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

func (q *queue[T]) sort() {
	sort.SliceStable(q.ready, func(i, j int) bool { return q.before(q.ready[i], q.ready[j]) })
}

// before is the queue's order: the biggest first, and by name.
func (q *queue[T]) before(a, b T) bool {
	if sa, sb := q.k.size(a), q.k.size(b); sa != sb {
		return sa > sb
	}
	return q.k.name(a) < q.k.name(b)
}

// batchable reports whether it may share a request with others.
func (q *queue[T]) batchable(it T) bool {
	return q.k.size(it) <= batchFileMax && !q.alone(it)
}

// alone reports whether it goes in a request of its own, never a batch.
func (q *queue[T]) alone(it T) bool { return q.k.alone != nil && q.k.alone(it) }

// next blocks until items are ready for a worker (big: from the biggest
// end) and returns one, or with batch set, as many small ones as a batch
// takes; it returns none when nothing is left. last reports that these are
// the last items and none other is in flight: the held ones, which then go
// in one batch whatever its size.
func (q *queue[T]) next(big, batch bool) (out []T, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) == 0 && (q.left > 0 || q.open) && !q.stopped {
		q.cond.Wait()
	}
	if q.stopped || len(q.ready) == 0 {
		return nil, false
	}
	if batch && q.k.held != nil && !q.open && q.pending == 0 && q.running == 0 && len(q.ready) == q.left {
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
		it := q.ready[i]
		size := q.k.size(it)
		if len(out) > 0 && (!batch || !q.batchable(it) || len(out) == batchFiles || bytes+size > batchBytes) {
			break
		}
		if big {
			q.ready = q.ready[1:] // not slices.Delete: no copy of all the rest
		} else {
			q.ready = q.ready[:i]
		}
		q.left--
		out = append(out, it)
		bytes += size
		if !batch || !q.batchable(it) {
			break
		}
	}
	q.running += len(out)
	return out, false
}

// done records how an item ended. When it was the last item not held to
// land, the held items become ready, and those of groups with a failure
// are returned, to be reported as held back.
func (q *queue[T]) done(it T, err error) (heldBack []T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	defer q.cond.Broadcast()
	q.running--
	if _, ok := q.group(it); ok {
		return nil
	}
	if err != nil && q.k.held != nil {
		if g, _ := q.k.held(it); g != "" {
			q.failed[g] = true
		}
	}
	if q.pending--; q.pending > 0 {
		return nil
	}
	heldBack = q.release()
	q.sort()
	return heldBack
}

// stop makes every worker return once its current item ends.
func (q *queue[T]) stop() {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// run transfers items on jobs workers in the queue's order, calling one for
// each item, or, when many is not nil, many for every item (the small ones
// several at once, a big one alone, last set for the batch that ends the
// transfers with nothing else in flight), and report for each result (the
// held-back items included, with heldErr), until all are done or ctx ends.
func run[T any](ctx context.Context, items []T, k kind[T], jobs int, one func(T) error,
	many func(ts []T, last bool) []error, report func(T, error), heldErr error) {
	e := start(ctx, k, min(jobs, len(items)), one, many, report, heldErr)
	e.add(items)
	e.wait()
}

// engine is a run whose items are added as they become known (a pull's,
// as each listing comes): the workers start at once, and the transfers of
// the items added first go while the rest are still being found.
type engine[T any] struct {
	q       *queue[T]
	wg      sync.WaitGroup
	stop    func() bool
	report  func(T, error)
	heldErr error
}

// start starts a run of jobs workers with no items yet; add gives them
// items, wait says there are no more and waits for them all to be done.
// The arguments are run's.
func start[T any](ctx context.Context, k kind[T], jobs int, one func(T) error,
	many func(ts []T, last bool) []error, report func(T, error), heldErr error) *engine[T] {
	e := &engine[T]{q: newQueue(k), report: report, heldErr: heldErr}
	e.stop = context.AfterFunc(ctx, e.q.stop)
	for w := 0; w < jobs; w++ {
		e.wg.Add(1)
		go func(big bool) {
			defer e.wg.Done()
			e.work(big, one, many)
		}(w%2 == 0)
	}
	return e
}

// work is one worker: it takes items (big: from the biggest end) until
// none is left.
func (e *engine[T]) work(big bool, one func(T) error, many func(ts []T, last bool) []error) {
	q := e.q
	for {
		ts, last := q.next(big, many != nil)
		if len(ts) == 0 {
			return
		}
		var errs []error
		if many == nil || q.alone(ts[0]) {
			errs = []error{one(ts[0])}
		} else {
			errs = many(ts, last)
		}
		for i, it := range ts {
			e.report(it, errs[i])
			for _, h := range q.done(it, errs[i]) {
				e.report(h, e.heldErr)
			}
		}
	}
}

// add gives the workers more items.
func (e *engine[T]) add(items []T) { e.q.add(items) }

// wait says no item comes after those added, and returns once every one
// is done (or ctx ended).
func (e *engine[T]) wait() {
	for _, h := range e.q.close() {
		e.report(h, e.heldErr)
	}
	e.wg.Wait()
	e.stop()
}
