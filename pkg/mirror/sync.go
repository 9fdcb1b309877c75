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
	"github.com/hoster-dev/hoster/pkg/transfer"
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
	PutFiles(ctx context.Context, files []transfer.BatchFile, tree bool) ([]transfer.BatchOutcome, api.Tree, error)
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
	s := &syncer{ctx: ctx, remote: remote, opts: opts, rep: rep, ceiling: opts.Jobs, sent: &sentHashes{}}
	s.link, _ = remote.(Link)
	a := s.ask()
	defer a.cancel()
	if err := s.readLocal(root); err != nil {
		a.abandon()
		return SyncSummary{}, err
	}
	defer s.warming.Wait() // quick: the tree has come by the time Sync returns
	s.warmEarly(a)
	if err := s.hashAndPlan(a); err != nil {
		return SyncSummary{}, err
	}
	if opts.DryRun {
		return s.sum, nil
	}
	kept, failedGames := s.transfer()
	if s.sum.NotSent > 0 || ctx.Err() != nil || len(s.plan.Uploads)+len(s.plan.Deletes) == 0 {
		return s.sum, ctx.Err() // a sync that changed nothing has just read the tree
	}
	s.verify(kept, failedGames)
	return s.sum, ctx.Err()
}

// syncer is one run of Sync: what it was given, and what its phases learn
// and do, each phase a method: ask the server (ask), read the local tree
// (readLocal), open connections ahead (warmEarly), hash and plan
// (hashAndPlan), send (transfer, with its deletes and uploads), and check
// the server's tree after (verify).
type syncer struct {
	ctx     context.Context
	remote  Remote
	opts    SyncOptions
	rep     Reporter
	link    Link // nil when remote does not know its link
	ceiling int  // the most transfers at once (opts.Jobs)
	jobs    int  // the transfers at once, once the link was timed

	left    map[string]bool // the games left as they are on the server
	local   *Local
	plan    Plan
	sent    *sentHashes
	batcher Batcher // nil: a PUT per file
	warming sync.WaitGroup

	mu  sync.Mutex  // guards sum and after while transfers run
	sum SyncSummary // what the sync did
	// after is the server's tree as the uploads' last batch brought it
	// back, when nothing of the sync ran after it: the check then needs
	// no request of its own.
	after api.Tree
}

// answers are the server's tree and the check, asked at the start of a
// sync: the server walks and hashes its tree while the sync walks and
// hashes the local one.
type answers struct {
	cancel   context.CancelFunc // cancels the tree request
	tree     chan treeResult
	arrived  atomic.Pointer[api.Tree] // the tree, once it came
	treeDone chan struct{}            // closed once the tree came, or not
	checked  chan struct{}            // closed once checkErr is set
	checkErr error
}

type treeResult struct {
	tree api.Tree
	err  error
}

// ask starts the tree request and the check.
func (s *syncer) ask() *answers {
	a := &answers{tree: make(chan treeResult, 1), treeDone: make(chan struct{}), checked: make(chan struct{})}
	var treeCtx context.Context
	treeCtx, a.cancel = context.WithCancel(s.ctx)
	go func() {
		t, err := s.remote.Tree(treeCtx)
		if err == nil {
			a.arrived.Store(&t)
		}
		close(a.treeDone)
		a.tree <- treeResult{t, err}
	}()
	go func() {
		defer close(a.checked)
		if s.opts.Check != nil {
			a.checkErr = s.opts.Check()
		}
	}()
	return a
}

// abandon ends the requests of a sync that stops before it needs them, and
// waits for them: none is left behind.
func (a *answers) abandon() {
	a.cancel()
	<-a.tree
	<-a.checked
}

// inFlight is how many transfers run at once: known once the check has
// timed the link.
func (s *syncer) inFlight() int {
	if s.link != nil {
		return InFlight(s.link.RTT(), s.ceiling)
	}
	return s.ceiling
}

// readLocal runs Prepare, which may name games to leave, and walks root.
func (s *syncer) readLocal(root string) error {
	var err error
	if s.opts.Prepare != nil {
		var leave []string
		leave, err = s.opts.Prepare()
		s.opts.Plan.Leave = append(slices.Clip(s.opts.Plan.Leave), leave...)
	}
	s.left = map[string]bool{}
	for _, g := range s.opts.Plan.Leave {
		s.left[g] = true
	}
	if err != nil {
		return err
	}
	if s.local, err = Walk(root); err != nil {
		return err
	}
	s.local.Cache = s.opts.Hashes
	return nil
}

// warmEarly opens a few connections for uploads at once, while the version
// and the tree are on their way: a small change then waits for no
// handshake of its own, and a big push starts sending a round trip
// earlier. A no-op pays for them, so they are few. Once the tree has come,
// the files the server lacks are uploads for sure: their connections open
// while the rest is hashed.
func (s *syncer) warmEarly(a *answers) {
	if s.link == nil || s.opts.DryRun {
		return
	}
	// Hashing updates the sizes: the walk's are taken here.
	walked := make(map[string]int64, len(s.local.Files))
	all := make([]int64, 0, len(s.local.Files))
	for p, f := range s.local.Files {
		walked[p] = f.Size
		all = append(all, f.Size)
	}
	s.link.Warm(s.ctx, min(uploadRequests(all, true), earlyWarm))
	s.warming.Add(1)
	go func() {
		defer s.warming.Done()
		<-a.treeDone
		<-a.checked
		if t := a.arrived.Load(); t != nil && a.checkErr == nil {
			var sizes []int64
			for p, size := range walked {
				if _, has := (*t)[p]; !has && !s.left[gameOf(p)] {
					sizes = append(sizes, size)
				}
			}
			s.link.Warm(s.ctx, min(uploadRequests(sizes, canBatch(s.remote)), s.inFlight()))
		}
	}()
}

// hashAndPlan hashes the local files the plan needs the hash of (once the
// server's tree has come, a file it does not have needs none: it is
// uploaded anyway), waits for the server's answers, and makes the plan.
func (s *syncer) hashAndPlan(a *answers) error {
	hashErr := s.local.HashNeeded(func(path string) bool {
		if s.left[gameOf(path)] {
			return false
		}
		t := a.arrived.Load()
		if t == nil {
			return true
		}
		_, has := (*t)[path]
		return has
	})
	tr := <-a.tree
	<-a.checked
	if a.checkErr != nil {
		return a.checkErr
	}
	if hashErr != nil {
		return hashErr
	}
	if tr.err != nil {
		return tr.err
	}
	s.jobs = s.inFlight()
	plan, err := MakePlan(s.local, tr.tree, s.opts.Plan)
	if err != nil {
		return err
	}
	s.plan = plan
	s.sum = SyncSummary{Unchanged: plan.Unchanged, Plan: plan, Failures: append([]Failure{}, s.local.Refused...), Left: s.opts.Plan.Leave}
	return nil
}

// transfer runs the plan: what stands in the way of an upload goes first;
// then the uploads; then the other deletes, but not in a game with a
// failed transfer, nor when the server stopped answering. It returns the
// deletes it kept back, and the games with a failure.
func (s *syncer) transfer() (kept []Delete, failedGames map[string]bool) {
	if canBatch(s.remote) {
		s.batcher = s.remote.(Batcher)
	}
	if s.link != nil {
		sizes := make([]int64, len(s.plan.Uploads))
		for i, u := range s.plan.Uploads {
			sizes[i] = u.Size
		}
		s.link.Warm(s.ctx, min(uploadRequests(sizes, s.batcher != nil), s.jobs))
	}
	var first, rest []Delete
	for _, d := range s.plan.Deletes {
		if d.First {
			first = append(first, d)
		} else {
			rest = append(rest, d)
		}
	}
	notSent := s.deletes(first)
	if notSent == 0 {
		notSent = s.uploads(s.plan.Uploads, len(rest) == 0)
	} else {
		s.sum.NotSent += len(s.plan.Uploads) // the server was gone before they could start
	}
	if notSent == 0 && len(rest) > 0 && s.ctx.Err() == nil {
		if retry := outOfSpaceUploads(s.plan.Uploads, s.sum.Failures); len(retry) > 0 {
			notSent, rest = s.retryOutOfSpace(rest, retry), nil
		}
	}
	failedGames = map[string]bool{}
	for _, f := range s.sum.Failures {
		failedGames[gameOf(f.Path)] = true
	}
	var run []Delete
	for _, d := range rest {
		if failedGames[gameOf(d.Path)] || notSent > 0 {
			kept = append(kept, d)
		} else {
			run = append(run, d)
		}
	}
	s.sum.DeletesSkipped = len(kept) > 0
	if notSent == 0 {
		s.deletes(run)
	}
	return kept, failedGames
}

// retryOutOfSpace is for a server whose disk is full: the deletes free
// space, so they run first (in every game: a full disk holds every game
// back), then the uploads that failed for want of it run again. It
// returns how many were not sent.
func (s *syncer) retryOutOfSpace(deletes []Delete, retry []Upload) (notSent int) {
	s.sum.Notes = append(s.sum.Notes, fmt.Sprintf("the server is out of space: ran the %d deletes, then sent again the %d uploads that failed for want of space", len(deletes), len(retry)))
	retried := map[string]bool{}
	for _, u := range retry {
		retried[u.Path] = true
	}
	// The retried uploads, and the code files held back behind them.
	s.sum.Failures = slices.DeleteFunc(s.sum.Failures, func(f Failure) bool {
		return f.Op == "upload" && (f.noSpace || f.Error == ErrHeldBack.Error() && retried[f.Path])
	})
	if notSent = s.deletes(deletes); notSent == 0 {
		notSent = s.uploads(retry, true)
	}
	return notSent
}

// record puts a transfer's outcome in the summary, and reports it.
func (s *syncer) record(op Op, files int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, errNotSent) {
		s.sum.NotSent++
		return
	}
	if err != nil {
		s.sum.Failures = append(s.sum.Failures, Failure{Op: op.Kind, Path: op.Path, Error: cause(err), noSpace: outOfSpace(err)})
	} else if op.Kind == "upload" {
		s.sum.Uploaded++
		s.sum.Bytes += op.Size
	} else {
		s.sum.Deleted += files
	}
	s.rep.Done(op, err)
}

// check asks the server's tree, to learn whether it still answers.
func (s *syncer) check() error { _, err := s.remote.Tree(s.ctx); return err }

// deletes runs the deletes of list, and returns how many were not sent
// because the server stopped answering.
func (s *syncer) deletes(list []Delete) (notSent int) {
	if len(list) == 0 {
		return 0
	}
	s.rep.Begin("delete", len(list), 0)
	n := len(transfers(s.ctx, s.jobs, len(list), s.check, func(i int) error {
		err := s.remote.DeleteFile(s.ctx, list[i].Path)
		s.record(Op{Kind: "delete", Path: list[i].Path}, list[i].Files, err)
		return err
	}))
	s.mu.Lock()
	s.sum.NotSent += n
	s.mu.Unlock()
	return n
}

// uploads runs the uploads of list, the code files last, and returns how
// many were not sent because the server stopped answering. With last set
// nothing follows them: their last batch asks for the tree.
func (s *syncer) uploads(list []Upload, last bool) (notSent int) {
	if len(list) == 0 {
		return 0
	}
	s.mu.Lock()
	before := s.sum.NotSent
	s.mu.Unlock()
	var bytes int64
	for _, u := range list {
		bytes += u.Size
	}
	s.rep.Begin("upload", len(list), bytes)
	g := newGate(s.check)
	var batch func([]Upload, bool) []error
	if s.batcher != nil {
		batch = func(us []Upload, final bool) []error { return s.putBatch(g, us, last && final) }
	}
	runUploads(s.ctx, list, s.jobs, func(u Upload) error {
		if g.closed() {
			return errNotSent
		}
		_, err := s.remote.PutFile(s.ctx, u.Path, u.Size, s.sent.opener(u))
		g.record(err)
		return err
	}, batch, func(u Upload, err error) {
		s.record(Op{Kind: "upload", Path: u.Path, Size: u.Size}, 1, err)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sum.NotSent - before
}

// putBatch uploads us in one batch, with tree set asking for the server's
// tree after it. Every upload goes in a batch (a big file in a batch of
// its own): the server reports the hash of what it wrote, so nothing is
// hashed here for the check after the sync.
func (s *syncer) putBatch(g *gate, us []Upload, tree bool) []error {
	files := make([]transfer.BatchFile, len(us))
	for i, u := range us {
		files[i] = transfer.BatchFile{Rel: u.Path, Size: u.Size, Open: u.open}
	}
	errs := make([]error, len(us))
	if g.closed() {
		for i := range errs {
			errs[i] = errNotSent
		}
		return errs
	}
	outs, t, err := s.batcher.PutFiles(s.ctx, files, tree)
	g.record(err)
	if t != nil {
		s.mu.Lock()
		s.after = t
		s.mu.Unlock()
	}
	for i, u := range us {
		if err != nil {
			errs[i] = err
			continue
		}
		if errs[i] = outs[i].Err; errs[i] == nil {
			s.sent.wrote(u, outs[i].SHA256)
		}
	}
	return errs
}

// verify reads the server's tree again: whatever ran at the same time
// (another sync, a hand edit) shows now. What failed, the deletes kept
// back, the games left and the files of failed games this sync does not
// have are excused.
func (s *syncer) verify(kept []Delete, failedGames map[string]bool) {
	excused := map[string]bool{}
	for _, f := range s.sum.Failures {
		excused[f.Path] = true
	}
	for _, d := range kept {
		excused[d.Path] = true
	}
	n, diffs, err := verify(s.ctx, s.remote, s.after, s.local, s.plan, s.sent, func(p string) bool {
		return under(excused, p) || s.left[gameOf(p)] || failedGames[gameOf(p)] && !s.local.has(p)
	})
	if err != nil {
		s.sum.Failures = append(s.sum.Failures, Failure{Op: "check", Path: api.PathTree, Error: err.Error()})
		return
	}
	s.sum.Differ = n
	s.sum.Failures = append(s.sum.Failures, diffs...)
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
		if f.Op == "upload" && f.noSpace {
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
