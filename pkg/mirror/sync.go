package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

// Remote is the server side of a sync; *apiclient.Client is one.
type Remote interface {
	Tree(ctx context.Context) (api.Tree, error)
	PutFile(ctx context.Context, rel string, size int64, open func() (io.ReadCloser, error)) (api.WriteResult, error)
	DeleteFile(ctx context.Context, rel string) error
}

// Link is a Remote that knows its link: the round trip it measured, and
// connections it can open ahead of the transfers. *apiclient.Client is one.
type Link interface {
	RTT() time.Duration
	Warm(ctx context.Context, n int)
}

// Batcher is a Remote that may take many files in one request, the batch
// upload extension of hoster-server; *apiclient.Client is one, and uses it only
// when the server offered it (CanBatch). Every other server gets a PUT per
// file.
type Batcher interface {
	CanBatch() bool
	// PutFiles uploads files in one request. With tree set, the answer
	// also brings the server's tree as it stands after them, where the
	// server gives it (nil where it does not).
	PutFiles(ctx context.Context, files []api.BatchFile, tree bool) ([]api.BatchOutcome, api.Tree, error)
}

// SyncOptions configure a sync.
type SyncOptions struct {
	// Jobs is the most transfers run at once; 0 means 8. Against a Link,
	// how many run follows its round trip (InFlight), up to Jobs.
	Jobs int
	// DryRun makes the plan and changes nothing.
	DryRun bool
	// Plan holds the safety rails.
	Plan PlanOptions
	// Hashes, when set, keeps local hashes from one sync to the next
	// (sync --watch); nil for a stateless one-shot sync.
	Hashes *HashCache
	// Prepare, when set, runs once the server's tree has been asked for and
	// before the local tree is walked, so that it overlaps the server's walk
	// (hoster sync generates the game modules here). The games it returns
	// ("<domain>/<game>") are left exactly as they are on the server, as
	// with PlanOptions.Leave; its error ends the sync and is returned as it
	// is.
	Prepare func() (leave []string, err error)
	// Check, when set, runs beside the tree request and Prepare (hoster
	// sync asks the server's version here, which also times the link); an
	// error from it ends the sync before anything is sent, and is returned
	// as it is.
	Check func() error
}

// SyncSummary is what a sync did.
type SyncSummary struct {
	Uploaded  int       `json:"uploaded"`
	Deleted   int       `json:"deleted"` // server files removed
	Unchanged int       `json:"unchanged"`
	Bytes     int64     `json:"bytes"`
	Failures  []Failure `json:"failures"`
	// DeletesSkipped is set when deletes were not made: in a game with a
	// failed upload, or all of them when the server became unreachable.
	DeletesSkipped bool `json:"deletesSkipped,omitempty"`
	// NotSent counts the transfers never started because the server
	// stopped answering.
	NotSent int `json:"notSent,omitempty"`
	// Differ counts the files in which the server's tree, read again after
	// the transfers, is not what this sync left (another sync ran at the
	// same time, or a hand edit).
	Differ int `json:"differ,omitempty"`
	// Notes say what the sync did beyond the plan, and why.
	Notes []string `json:"notes,omitempty"`
	// Left are the games Prepare asked to leave as they are on the server.
	Left []string `json:"left,omitempty"`
	// Plan is what was (or, in a dry run, would be) done.
	Plan Plan `json:"-"`
}

// ErrUploadsFailed explains deletes that were not made.
var ErrUploadsFailed = errors.New("some uploads failed, so their games' server files were not deleted (a half-pushed game keeps every file it may still need); fix the failures and sync again")

// Sync mirrors the games under root to remote: walk and hash locally while the
// server's tree is fetched, plan, upload what is new or changed, then delete
// what is gone, but only when every upload succeeded. A failure of one file
// does not stop the others; each is in the summary. The error is for what
// stops the whole sync: an unreadable root, no tree, a refused plan.
func Sync(ctx context.Context, root string, remote Remote, opts SyncOptions, rep Reporter) (SyncSummary, error) {
	if rep == nil {
		rep = NopReporter{}
	}
	if opts.Jobs <= 0 {
		opts.Jobs = 8
	}
	// The server walks and hashes its tree while we walk and hash ours. Once
	// its tree has arrived, a file it does not have needs no hash: it is
	// uploaded anyway.
	type treeResult struct {
		tree api.Tree
		err  error
	}
	treeCh := make(chan treeResult, 1)
	var arrived atomic.Pointer[api.Tree]
	treeCtx, cancelTree := context.WithCancel(ctx)
	defer cancelTree()
	treeDone := make(chan struct{})
	go func() {
		t, err := remote.Tree(treeCtx)
		if err == nil {
			arrived.Store(&t)
		}
		close(treeDone)
		treeCh <- treeResult{t, err}
	}()
	var checkErr error
	checked := make(chan struct{}) // closed when checkErr is set
	go func() {
		defer close(checked)
		if opts.Check != nil {
			checkErr = opts.Check()
		}
	}()
	// How many transfers run at once is known once the check has timed
	// the link.
	link, _ := remote.(Link)
	ceiling := opts.Jobs
	jobs := func() int {
		if link != nil {
			return InFlight(link.RTT(), ceiling)
		}
		return ceiling
	}
	var local *Local
	var err error
	if opts.Prepare != nil {
		var leave []string
		leave, err = opts.Prepare()
		opts.Plan.Leave = append(slices.Clip(opts.Plan.Leave), leave...)
	}
	left := map[string]bool{}
	for _, g := range opts.Plan.Leave {
		left[g] = true
	}
	if err == nil {
		local, err = Walk(root)
	}
	if err != nil {
		cancelTree()
		<-treeCh // do not leave the requests behind
		<-checked
		return SyncSummary{}, err
	}
	local.Cache = opts.Hashes
	if link != nil && !opts.DryRun {
		// A few connections for uploads are opened at once, while the
		// version and the tree are on their way: a small change then waits
		// for no handshake of its own, and a big push starts sending a
		// round trip earlier. A no-op pays for them, so they are few.
		// (Hashing updates the sizes: the walk's are taken here.)
		walked := make(map[string]int64, len(local.Files))
		all := make([]int64, 0, len(local.Files))
		for p, f := range local.Files {
			walked[p] = f.Size
			all = append(all, f.Size)
		}
		link.Warm(ctx, min(uploadRequests(all, true), earlyWarm))
		// Files the server lacks are uploads for sure: open their
		// connections while the rest is hashed.
		var warming sync.WaitGroup
		defer warming.Wait() // quick: the tree has come by the time Sync returns
		warming.Add(1)
		go func() {
			defer warming.Done()
			<-treeDone
			<-checked
			if t := arrived.Load(); t != nil && checkErr == nil {
				var sizes []int64
				for p, size := range walked {
					if _, has := (*t)[p]; !has && !left[gameOf(p)] {
						sizes = append(sizes, size)
					}
				}
				link.Warm(ctx, min(uploadRequests(sizes, canBatch(remote)), jobs()))
			}
		}()
	}
	hashErr := local.HashNeeded(func(path string) bool {
		if left[gameOf(path)] {
			return false
		}
		t := arrived.Load()
		if t == nil {
			return true
		}
		_, has := (*t)[path]
		return has
	})
	tr := <-treeCh
	<-checked
	if checkErr != nil {
		return SyncSummary{}, checkErr
	}
	if hashErr != nil {
		return SyncSummary{}, hashErr
	}
	if tr.err != nil {
		return SyncSummary{}, tr.err
	}
	opts.Jobs = jobs()
	plan, err := MakePlan(local, tr.tree, opts.Plan)
	if err != nil {
		return SyncSummary{}, err
	}
	sum := SyncSummary{Unchanged: plan.Unchanged, Plan: plan, Failures: append([]Failure{}, local.Refused...), Left: opts.Plan.Leave}
	if opts.DryRun {
		return sum, nil
	}

	var mu sync.Mutex
	record := func(op Op, files int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if errors.Is(err, errNotSent) {
			sum.NotSent++
			return
		}
		if err != nil {
			sum.Failures = append(sum.Failures, Failure{Op: op.Kind, Path: op.Path, Error: cause(err)})
		} else if op.Kind == "upload" {
			sum.Uploaded++
			sum.Bytes += op.Size
		} else {
			sum.Deleted += files
		}
		rep.Done(op, err)
	}
	check := func() error { _, err := remote.Tree(ctx); return err }
	deletes := func(list []Delete) (notSent int) {
		if len(list) == 0 {
			return 0
		}
		rep.Begin("delete", len(list), 0)
		n := len(transfers(ctx, opts.Jobs, len(list), check, func(i int) error {
			err := remote.DeleteFile(ctx, list[i].Path)
			record(Op{Kind: "delete", Path: list[i].Path}, list[i].Files, err)
			return err
		}))
		mu.Lock()
		sum.NotSent += n
		mu.Unlock()
		return n
	}
	sent := &sentHashes{}
	// after is the server's tree as the uploads' last batch brought it
	// back, when nothing of the sync ran after it: the check then needs
	// no request of its own.
	var after api.Tree
	var putBatch func(g *gate, us []Upload, tree bool) []error
	if canBatch(remote) {
		b := remote.(Batcher)
		// Every upload goes in a batch (a big file in a batch of its own):
		// the server reports the hash of what it wrote, so nothing is
		// hashed here for the check after the sync.
		putBatch = func(g *gate, us []Upload, tree bool) []error {
			files := make([]api.BatchFile, len(us))
			for i, u := range us {
				files[i] = api.BatchFile{Rel: u.Path, Size: u.Size, Open: u.open}
			}
			errs := make([]error, len(us))
			if g.closed() {
				for i := range errs {
					errs[i] = errNotSent
				}
				return errs
			}
			outs, t, err := b.PutFiles(ctx, files, tree)
			g.record(err)
			if t != nil {
				mu.Lock()
				after = t
				mu.Unlock()
			}
			for i, u := range us {
				if err != nil {
					errs[i] = err
					continue
				}
				if errs[i] = outs[i].Err; errs[i] == nil {
					sent.wrote(u, outs[i].SHA256)
				}
			}
			return errs
		}
	}
	// uploads runs the uploads of list, the code files last, and returns
	// how many were not sent because the server stopped answering. With
	// last set nothing follows them: their last batch asks for the tree.
	uploads := func(list []Upload, last bool) (notSent int) {
		if len(list) == 0 {
			return 0
		}
		before := sum.NotSent
		var bytes int64
		for _, u := range list {
			bytes += u.Size
		}
		rep.Begin("upload", len(list), bytes)
		g := newGate(check)
		var batch func([]Upload, bool) []error
		if putBatch != nil {
			batch = func(us []Upload, final bool) []error { return putBatch(g, us, last && final) }
		}
		runUploads(ctx, list, opts.Jobs, func(u Upload) error {
			if g.closed() {
				return errNotSent
			}
			_, err := remote.PutFile(ctx, u.Path, u.Size, sent.opener(u))
			g.record(err)
			return err
		}, batch, func(u Upload, err error) {
			record(Op{Kind: "upload", Path: u.Path, Size: u.Size}, 1, err)
		})
		mu.Lock()
		defer mu.Unlock()
		return sum.NotSent - before
	}

	if link != nil {
		sizes := make([]int64, len(plan.Uploads))
		for i, u := range plan.Uploads {
			sizes[i] = u.Size
		}
		link.Warm(ctx, min(uploadRequests(sizes, putBatch != nil), opts.Jobs))
	}
	// What stands in the way of an upload goes first; then the uploads;
	// then the other deletes, but not in a game with a failed transfer.
	var first, rest []Delete
	for _, d := range plan.Deletes {
		if d.First {
			first = append(first, d)
		} else {
			rest = append(rest, d)
		}
	}
	notSent := deletes(first)
	if notSent == 0 {
		notSent = uploads(plan.Uploads, len(rest) == 0)
	} else {
		sum.NotSent += len(plan.Uploads) // the server was gone before they could start
	}
	if notSent == 0 && len(rest) > 0 && ctx.Err() == nil {
		if retry := outOfSpaceUploads(plan.Uploads, sum.Failures); len(retry) > 0 {
			// The server's disk is full: the deletes free space, so they
			// run first (in every game: a full disk holds every game back),
			// then the uploads that failed for want of it run again.
			sum.Notes = append(sum.Notes, fmt.Sprintf("the server is out of space: ran the %d deletes, then sent again the %d uploads that failed for want of space", len(rest), len(retry)))
			retried := map[string]bool{}
			for _, u := range retry {
				retried[u.Path] = true
			}
			// The retried uploads, and the code files held back behind them.
			sum.Failures = slices.DeleteFunc(sum.Failures, func(f Failure) bool {
				return f.Op == "upload" && (outOfSpaceMsg(f.Error) || f.Error == ErrHeldBack.Error() && retried[f.Path])
			})
			if notSent = deletes(rest); notSent == 0 {
				notSent = uploads(retry, true)
			}
			rest = nil
		}
	}
	failedGames := map[string]bool{}
	for _, f := range sum.Failures {
		failedGames[gameOf(f.Path)] = true
	}
	var run, kept []Delete
	for _, d := range rest {
		if failedGames[gameOf(d.Path)] || notSent > 0 {
			kept = append(kept, d)
		} else {
			run = append(run, d)
		}
	}
	sum.DeletesSkipped = len(kept) > 0
	if notSent == 0 {
		deletes(run)
	}
	if sum.NotSent > 0 || ctx.Err() != nil || len(plan.Uploads)+len(plan.Deletes) == 0 {
		return sum, ctx.Err() // a sync that changed nothing has just read the tree
	}

	// Whatever ran at the same time (another sync, a hand edit) shows now.
	excused := map[string]bool{}
	for _, f := range sum.Failures {
		excused[f.Path] = true
	}
	for _, d := range kept {
		excused[d.Path] = true
	}
	n, diffs, err := verify(ctx, remote, after, local, plan, sent, func(p string) bool {
		return under(excused, p) || left[gameOf(p)] || failedGames[gameOf(p)] && !local.has(p)
	})
	if err != nil {
		sum.Failures = append(sum.Failures, Failure{Op: "check", Path: api.PathTree, Error: err.Error()})
		return sum, ctx.Err()
	}
	sum.Differ = n
	sum.Failures = append(sum.Failures, diffs...)
	return sum, ctx.Err()
}

// earlyWarm is how many connections a sync opens before it knows what it
// will send.
const earlyWarm = 8

// canBatch reports whether remote takes uploads in batches.
func canBatch(remote Remote) bool {
	b, ok := remote.(Batcher)
	return ok && b.CanBatch()
}

// outOfSpaceUploads are the uploads of list that failed because the
// server's disk was full.
func outOfSpaceUploads(list []Upload, failures []Failure) []Upload {
	full := map[string]bool{}
	for _, f := range failures {
		if f.Op == "upload" && outOfSpaceMsg(f.Error) {
			full[f.Path] = true
		}
	}
	var out []Upload
	for _, u := range list {
		if full[u.Path] {
			out = append(out, u)
		}
	}
	return out
}

// parallel runs do(0..n-1) on jobs goroutines, stopping early when ctx ends.
func parallel(ctx context.Context, jobs, n int, do func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				do(i)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}

// InFlight is how many transfers to keep in flight across a link with the
// given round trip: enough that the round trips overlap (one more transfer
// per perTransfer of round trip), at least 8, at most ceiling (--jobs).
func InFlight(rtt time.Duration, ceiling int) int {
	n := 8 + int(rtt/perTransfer)
	return max(min(n, ceiling), 1)
}

// perTransfer is the round trip that warrants one more transfer in flight.
const perTransfer = 500 * time.Microsecond
