package mirror

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

// Remote is the server side of a sync; *api.Client is one.
type Remote interface {
	Tree(ctx context.Context) (api.Tree, error)
	PutFile(ctx context.Context, rel string, size int64, open func() (io.ReadCloser, error)) (api.WriteResult, error)
	DeleteFile(ctx context.Context, rel string) error
}

// Link is a Remote that knows its link: the round trip it measured, and
// connections it can open ahead of the transfers. *api.Client is one.
type Link interface {
	RTT() time.Duration
	Warm(ctx context.Context, n int)
}

// Batcher is a Remote that may take many files in one request, the batch
// upload extension of hoster-server; *api.Client is one, and uses it only
// when the server offered it (CanBatch). Every other server gets a PUT per
// file.
type Batcher interface {
	CanBatch() bool
	PutFiles(ctx context.Context, files []api.BatchFile) ([]error, error)
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
}

// SyncSummary is what a sync did.
type SyncSummary struct {
	Uploaded  int       `json:"uploaded"`
	Deleted   int       `json:"deleted"` // server files removed
	Unchanged int       `json:"unchanged"`
	Bytes     int64     `json:"bytes"`
	Failures  []Failure `json:"failures"`
	// DeletesSkipped is set when uploads failed and no delete was made.
	DeletesSkipped bool `json:"deletesSkipped,omitempty"`
	// Left are the games Prepare asked to leave as they are on the server.
	Left []string `json:"left,omitempty"`
	// Plan is what was (or, in a dry run, would be) done.
	Plan Plan `json:"-"`
}

// ErrUploadsFailed explains deletes that were not made.
var ErrUploadsFailed = errors.New("some uploads failed, so no server file was deleted (a half-pushed game keeps every file it may still need); fix the failures and sync again")

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
	link, _ := remote.(Link)
	if link != nil {
		opts.Jobs = InFlight(link.RTT(), opts.Jobs)
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
		<-treeCh // do not leave the request behind
		return SyncSummary{}, err
	}
	local.Cache = opts.Hashes
	if link != nil && !opts.DryRun {
		// Files the server lacks are uploads for sure: open their
		// connections while the rest is hashed.
		var warming sync.WaitGroup
		defer warming.Wait() // quick: the tree has come by the time Sync returns
		warming.Add(1)
		go func() {
			defer warming.Done()
			<-treeDone
			if t := arrived.Load(); t != nil {
				n := 0
				for p := range local.Files {
					if _, has := (*t)[p]; !has && !left[gameOf(p)] {
						n++
					}
				}
				link.Warm(ctx, min(n, opts.Jobs))
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
	if hashErr != nil {
		return SyncSummary{}, hashErr
	}
	if tr.err != nil {
		return SyncSummary{}, tr.err
	}
	plan, err := MakePlan(local, tr.tree, opts.Plan)
	if err != nil {
		return SyncSummary{}, err
	}
	sum := SyncSummary{Unchanged: plan.Unchanged, Plan: plan, Failures: []Failure{}, Left: opts.Plan.Leave}
	if opts.DryRun {
		return sum, nil
	}

	var mu sync.Mutex
	record := func(op Op, files int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			sum.Failures = append(sum.Failures, Failure{Op: op.Kind, Path: op.Path, Error: api.Cause(err)})
		} else if op.Kind == "upload" {
			sum.Uploaded++
			sum.Bytes += op.Size
		} else {
			sum.Deleted += files
		}
		rep.Done(op, err)
	}

	if link != nil {
		link.Warm(ctx, min(len(plan.Uploads)+len(plan.Deletes), opts.Jobs))
	}
	rep.Begin("upload", len(plan.Uploads), plan.UploadBytes())
	var putBatch func([]Upload) []error
	if b, ok := remote.(Batcher); ok && b.CanBatch() {
		putBatch = func(us []Upload) []error {
			files := make([]api.BatchFile, len(us))
			for i, u := range us {
				files[i] = api.BatchFile{Rel: u.Path, Size: u.Size, Open: func() (io.ReadCloser, error) { return os.Open(u.Abs) }}
			}
			errs, err := b.PutFiles(ctx, files)
			if err != nil {
				for i := range errs {
					errs[i] = err
				}
			}
			return errs
		}
	}
	runUploads(ctx, plan.Uploads, opts.Jobs, func(u Upload) error {
		_, err := remote.PutFile(ctx, u.Path, u.Size, func() (io.ReadCloser, error) { return os.Open(u.Abs) })
		return err
	}, putBatch, func(u Upload, err error) {
		record(Op{Kind: "upload", Path: u.Path, Size: u.Size}, 1, err)
	})
	if len(sum.Failures) > 0 || ctx.Err() != nil {
		sum.DeletesSkipped = len(plan.Deletes) > 0
		return sum, ctx.Err()
	}

	rep.Begin("delete", len(plan.Deletes), 0)
	parallel(ctx, opts.Jobs, len(plan.Deletes), func(i int) {
		d := plan.Deletes[i]
		err := remote.DeleteFile(ctx, d.Path)
		record(Op{Kind: "delete", Path: d.Path}, d.Files, err)
	})
	return sum, ctx.Err()
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
