package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hoster-dev/hoster/pkg/api"
)

// Remote is the server side of a sync; *api.Client is one.
type Remote interface {
	Tree(ctx context.Context) (api.Tree, error)
	PutFile(ctx context.Context, rel string, size int64, open func() (io.ReadCloser, error)) (api.WriteResult, error)
	DeleteFile(ctx context.Context, rel string) error
}

// SyncOptions configure a sync.
type SyncOptions struct {
	// Jobs is how many transfers run at once; 0 means 8.
	Jobs int
	// DryRun makes the plan and changes nothing.
	DryRun bool
	// Plan holds the safety rails.
	Plan PlanOptions
	// Prepare, when set, runs once the server's tree has been asked for and
	// before the local tree is walked, so that it overlaps the server's walk
	// (hoster sync generates the game modules here). Its error ends the
	// sync and is returned as it is.
	Prepare func() error
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
	// Plan is what was (or, in a dry run, would be) done.
	Plan Plan `json:"-"`
}

// ErrUploadsFailed explains deletes that were not made.
var ErrUploadsFailed = errors.New("some uploads failed, so their games' server files were not deleted (a half-pushed game keeps every file it may still need); fix the failures and sync again")

// Sync mirrors the games under root to remote: walk and hash locally while the
// server's tree is fetched, plan, delete what stands in the way of an upload,
// upload what is new or changed, then delete what is gone, except in a game
// with a failed upload (unless the server is out of space: then the deletes
// run, and the uploads that failed for want of space run again). A failure of
// one file does not stop the others; each is in the summary. When the server
// stops answering, no further transfer starts (NotSent counts them). Last,
// the server's tree is read again and compared with what the sync left
// (Differ). The error is for what stops the whole sync: an unreadable root,
// no tree, a refused plan.
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
	go func() {
		t, err := remote.Tree(treeCtx)
		if err == nil {
			arrived.Store(&t)
		}
		treeCh <- treeResult{t, err}
	}()
	var local *Local
	var err error
	if opts.Prepare != nil {
		err = opts.Prepare()
	}
	if err == nil {
		local, err = Walk(root)
	}
	if err != nil {
		cancelTree()
		<-treeCh // do not leave the request behind
		return SyncSummary{}, err
	}
	hashErr := local.HashNeeded(func(path string) bool {
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
	sum := SyncSummary{Unchanged: plan.Unchanged, Plan: plan, Failures: append([]Failure{}, local.Refused...)}
	if opts.DryRun {
		return sum, nil
	}

	var mu sync.Mutex
	record := func(op Op, files int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			sum.Failures = append(sum.Failures, Failure{Op: op.Kind, Path: op.Path, Error: err.Error()})
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
		return len(transfers(ctx, opts.Jobs, len(list), check, func(i int) error {
			err := remote.DeleteFile(ctx, list[i].Path)
			record(Op{Kind: "delete", Path: list[i].Path}, list[i].Files, err)
			return err
		}))
	}
	sent := &sentHashes{}
	uploads := func(list []Upload) (notSent int) {
		var bytes int64
		for _, u := range list {
			bytes += u.Size
		}
		rep.Begin("upload", len(list), bytes)
		return len(transfers(ctx, opts.Jobs, len(list), check, func(i int) error {
			u := list[i]
			_, err := remote.PutFile(ctx, u.Path, u.Size, sent.opener(u))
			record(Op{Kind: "upload", Path: u.Path, Size: u.Size}, 1, err)
			return err
		}))
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
	sum.NotSent = deletes(first)
	if sum.NotSent == 0 {
		sum.NotSent = uploads(plan.Uploads)
	}
	if sum.NotSent == 0 && len(rest) > 0 && ctx.Err() == nil {
		if retry := outOfSpaceUploads(plan.Uploads, sum.Failures); len(retry) > 0 {
			// The server's disk is full: the deletes free space, so they
			// run first (in every game: a full disk holds every game back),
			// then the uploads that failed for want of it run again.
			sum.Notes = append(sum.Notes, fmt.Sprintf("the server is out of space: ran the %d deletes first, then sent the %d uploads that failed for want of space again", len(rest), len(retry)))
			sum.Failures = slices.DeleteFunc(sum.Failures, func(f Failure) bool { return f.Op == "upload" && outOfSpace(errors.New(f.Error)) })
			if sum.NotSent = deletes(rest); sum.NotSent == 0 {
				sum.NotSent = uploads(retry)
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
		if failedGames[gameOf(d.Path)] || sum.NotSent > 0 {
			kept = append(kept, d)
		} else {
			run = append(run, d)
		}
	}
	sum.DeletesSkipped = len(kept) > 0
	if sum.NotSent == 0 {
		sum.NotSent = deletes(run)
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
	n, diffs, err := verify(ctx, remote, local, plan, sent, func(p string) bool { return under(excused, p) || failedGames[gameOf(p)] && !local.has(p) })
	if err != nil {
		sum.Failures = append(sum.Failures, Failure{Op: "check", Path: "", Error: err.Error()})
		return sum, ctx.Err()
	}
	sum.Differ = n
	sum.Failures = append(sum.Failures, diffs...)
	return sum, ctx.Err()
}

// outOfSpaceUploads returns the uploads that failed because the server's
// disk is full.
func outOfSpaceUploads(list []Upload, failures []Failure) []Upload {
	full := map[string]bool{}
	for _, f := range failures {
		if f.Op == "upload" && outOfSpace(errors.New(f.Error)) {
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
