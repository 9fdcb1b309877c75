package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"github.com/hoster-dev/hoster/pkg/layout"
	"github.com/hoster-dev/hoster/pkg/transfer"
)

// LogsRemote is the server side of a pull; *apiclient.Client is one.
type LogsRemote interface {
	Logs(ctx context.Context) (api.LogListing, error)
	Stats(ctx context.Context) (api.StatsListing, error)
	GameLogs(ctx context.Context) (api.GameLogListing, error)
	Fetch(ctx context.Context, route string, query url.Values, offset int64) (*transfer.Fetched, error)
}

// PullSummary is what a pull did.
type PullSummary struct {
	Fetched   int       `json:"fetched"`   // files whole or appended
	Bytes     int64     `json:"bytes"`     // bytes received
	Unchanged int       `json:"unchanged"` // files already exact
	Failures  []Failure `json:"failures"`
	// Kept are the archived copies set aside because the server's copy no
	// longer continued them: each was fetched too.
	Kept []Kept `json:"kept,omitempty"`
}

func (s *PullSummary) add(o PullSummary) {
	s.Fetched += o.Fetched
	s.Bytes += o.Bytes
	s.Unchanged += o.Unchanged
	s.Failures = append(s.Failures, o.Failures...)
	s.Kept = append(s.Kept, o.Kept...)
}

// Kept is an archived copy that a pull set aside, under a name of its own
// beside it, before putting the server's copy in its place: the server's
// copy did not begin with the archived bytes (it shrank, or was
// rewritten), and the mirror loses no byte it held.
type Kept struct {
	Path string `json:"path"` // the file, as the listing names it
	As   string `json:"as"`   // where the archived copy now is: Path + ".kept-<n>"
	Why  string `json:"why"`
}

// fileJob is one file to bring up to date.
type fileJob struct {
	route   string  // api.PathLogsFile, ...
	key     string  // the query's one parameter: which, name or path
	value   string  // its value
	dst     string  // local path
	size    int64   // listed size
	growing bool    // grows on the server: a larger listing is a new tail
	label   string  // for reports
	local   int64   // the local copy's size when planned; -1: none
	staged  bool    // written into its new folder's hidden one (folders)
	got     fetched // what fetching it did
}

// query is the job's query string.
func (j *fileJob) query() url.Values { return url.Values{j.key: {j.value}} }

// tail reports whether the job appends to its local copy (a Range
// request) rather than fetching the file whole.
func (j *fileJob) tail() bool { return j.growing && j.local >= 0 && j.local <= j.size }

// fetches are a pull's items of the transfer engine (engine.go): a tail,
// or a file too big to share a request, goes in a request of its own.
var fetches = kind[*fileJob]{
	size:  (*fileJob).bytes,
	name:  func(j *fileJob) string { return j.label },
	alone: func(j *fileJob) bool { return j.tail() || j.size > batchFileMax },
}

// bytes is about what fetching the job brings: a tail, or the whole file.
func (j *fileJob) bytes() int64 {
	if j.tail() {
		return j.size - j.local
	}
	return j.size
}

// The mirror is stateless: every decision is made from the listing and the
// local files. A local file equal in size is exact (the server's files are
// append-only or immutable). A frozen file (a rotated log, a past stats day)
// that is missing or differs in size is fetched again whole: such a file was
// rewritten, not grown, so completing it would give a copy right in size and
// wrong in content. A growing file (the active log, today's stats, and every
// game-log hour file, whose changed size the contract says is a new tail) is
// completed with a Range request when the local copy is smaller, and fetched
// whole when it is larger. Whole files go into a temporary file renamed into
// place only when the byte count is the listed size (in a folder new to the
// mirror, into a hidden folder beside it, each file kept there only at that
// count, renamed into place once its files are done: folders); a tail is
// appended only from a 206 that starts at the local size, and cut back to
// that size if the transfer fails. Local files the server no longer lists are kept: the
// mirror is an archive. No file is synced to disk (pkg/atomicfile's Copy):
// a crash may lose what was not yet written back, never put a part in
// place on a running machine, and on file systems that set a file's size
// on disk only once its data is there (ext4's default ordered mode, XFS)
// what it loses leaves a file shorter than listed, or none, which the next
// run fetches again, whole or as a tail; a sync a file would cost a journal
// commit each, 29,000 on a first pull.

// Part is one folder of a mirror and the listing it follows: PartLogs,
// PartStats or PartGameLogs.
type Part struct {
	Dir  string
	plan planner
}

// planner lists a part's files from the server, into dir: it hands them
// to emit as they become known, a folder's at a time or all at once,
// with the listing's entries it refused (bad), and returns the listing's
// error (what it emitted before failing is fetched).
type planner func(ctx context.Context, remote LogsRemote, dir string, emit func(list []*fileJob, bad []Failure)) error

// whole is a planner of a listing that comes whole.
func whole(plan func(ctx context.Context, remote LogsRemote, dir string) ([]*fileJob, []Failure, error)) planner {
	return func(ctx context.Context, remote LogsRemote, dir string, emit func([]*fileJob, []Failure)) error {
		list, bad, err := plan(ctx, remote, dir)
		if err == nil {
			emit(list, bad)
		}
		return err
	}
}

// PartLogs mirrors the access logs into dir.
func PartLogs(dir string) Part { return Part{Dir: dir, plan: whole(planLogs)} }

// PartStats mirrors the health day-files into dir.
func PartStats(dir string) Part { return Part{Dir: dir, plan: whole(planStats)} }

// PartGameLogs mirrors the game-log tree into dir (variant 1 only: a
// variant 2 server answers its listing with apiclient.ErrNotFound).
func PartGameLogs(dir string) Part { return Part{Dir: dir, plan: planGameLogs} }

// PullOptions configure a pull.
type PullOptions struct {
	// Jobs is the most fetches at once; 0 means 8. Against a Link, how
	// many run follows its round trip (InFlight), up to Jobs.
	Jobs int
	// Check, when set, runs beside the listings (hoster pull asks the
	// server's version here, which also times the link and learns whether
	// the server offers the batch download); an error from it ends the
	// pull before anything is fetched, and is returned as it is.
	Check func() error
}

// PullLogs, PullStats and PullGameLogs mirror one part on its own.
func PullLogs(ctx context.Context, remote LogsRemote, dir string, jobs int, rep Reporter) (PullSummary, error) {
	return pullOne(ctx, remote, PartLogs(dir), jobs, rep)
}

func PullStats(ctx context.Context, remote LogsRemote, dir string, jobs int, rep Reporter) (PullSummary, error) {
	return pullOne(ctx, remote, PartStats(dir), jobs, rep)
}

func PullGameLogs(ctx context.Context, remote LogsRemote, dir string, jobs int, rep Reporter) (PullSummary, error) {
	return pullOne(ctx, remote, PartGameLogs(dir), jobs, rep)
}

func pullOne(ctx context.Context, remote LogsRemote, p Part, jobs int, rep Reporter) (PullSummary, error) {
	sum, errs, err := Pull(ctx, remote, []Part{p}, PullOptions{Jobs: jobs}, rep)
	if err == nil {
		err = errs[0]
	}
	return sum, err
}

// Pull mirrors the parts: their listings are asked at once (and the check
// beside them), and every file of every part is brought up to date in one
// run of the transfer engine, as many at once as the link warrants, each
// part's files from the moment its listing comes: the access logs and the
// day-files are on their way while the game-log tree is still being
// listed, and each game-log folder's files as soon as the listing (where
// the remote streams it, GameLogStreamer) has named them all. errs holds
// each part's own error (its listing failed: only the files it named
// before were fetched), err what stops the whole pull (the check failed:
// nothing was fetched). The local folders are read scanFolders at once,
// as their files are listed.
func Pull(ctx context.Context, remote LogsRemote, parts []Part, opts PullOptions, rep Reporter) (sum PullSummary, errs []error, err error) {
	if rep == nil {
		rep = NopReporter{}
	}
	if opts.Jobs <= 0 {
		opts.Jobs = 8
	}
	errs = make([]error, len(parts))
	lists := make(chan listed, 16)
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			once := &uniq{}
			errs[i] = p.plan(ctx, remote, p.Dir, func(list []*fileJob, bad []Failure) {
				lists <- listed{once.only(list), bad}
			})
			if dup := once.failure(); dup != nil {
				lists <- listed{bad: []Failure{*dup}}
			}
		})
	}
	go func() {
		wg.Wait()
		close(lists)
	}()
	if opts.Check != nil {
		err = opts.Check()
	}
	if err != nil {
		for range lists {
		}
		return PullSummary{Failures: []Failure{}}, errs, err
	}
	jobs := opts.Jobs
	if l, ok := remote.(Link); ok {
		jobs = InFlight(l.RTT(), opts.Jobs)
	}
	f := startPull(ctx, remote, jobs, rep)
	f.addAll(lists)
	return f.wait(), errs, nil
}

// listed is some of a listing's files, and entries of it refused.
type listed struct {
	list []*fileJob
	bad  []Failure
}

// planLogs lists the access logs: access.log is the active log,
// access-<ts>.log each rotated one. A rotated log not seen locally before
// means the active log rotated, so the local active copy is started afresh.
func planLogs(ctx context.Context, remote LogsRemote, dir string) ([]*fileJob, []Failure, error) {
	l, err := listInto(ctx, remote.Logs, dir)
	if err != nil {
		return nil, nil, err
	}
	var list []*fileJob
	rotatedNew := false
	for _, r := range l.Rotated {
		name := layout.RotatedLogName(r.TS)
		dst := filepath.Join(dir, name)
		if _, err := os.Stat(dst); errors.Is(err, os.ErrNotExist) {
			rotatedNew = true
		}
		list = append(list, &fileJob{route: api.PathLogsFile, key: api.QueryWhich, value: strconv.FormatInt(r.TS, 10),
			dst: dst, size: r.Size, label: name})
	}
	active := filepath.Join(dir, api.AccessLogName)
	if rotatedNew {
		// The active log rotated since the last run: what we hold of it is
		// now (part of) a rotated file, fetched under its own name.
		if err := os.Remove(active); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("resetting %s: %w", active, err)
		}
	}
	if l.Active != nil {
		list = append(list, &fileJob{route: api.PathLogsFile, key: api.QueryWhich, value: api.WhichActive,
			dst: active, size: l.Active.Size, growing: true, label: api.AccessLogName})
	}
	return list, nil, nil
}

// listInto asks the server for a listing with get and makes dir, which
// its files are pulled into.
func listInto[L any](ctx context.Context, get func(context.Context) (L, error), dir string) (L, error) {
	l, err := get(ctx)
	if err != nil {
		return l, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return l, fmt.Errorf("creating %s: %w", dir, err)
	}
	return l, nil
}

// planStats lists the health day-files, mirrored under their own names.
// The newest file of each type may still grow; the others are frozen.
func planStats(ctx context.Context, remote LogsRemote, dir string) ([]*fileJob, []Failure, error) {
	l, err := listInto(ctx, remote.Stats, dir)
	if err != nil {
		return nil, nil, err
	}
	newest := map[string]string{}
	for _, f := range l.Files {
		if f.Name > newest[f.Type] {
			newest[f.Type] = f.Name
		}
	}
	var list []*fileJob
	var bad []Failure
	for _, f := range l.Files {
		if _, _, ok := layout.ParseStatsFileName(f.Name); !ok {
			bad = append(bad, Failure{Op: "fetch", Path: shownName(f.Name), Error: "the server listed a name that is not <type>-YYYY-MM-DD.log; skipped"})
			continue
		}
		list = append(list, &fileJob{route: api.PathStatsFile, key: api.QueryName, value: f.Name,
			dst: filepath.Join(dir, f.Name), size: f.Size, growing: newest[f.Type] == f.Name, label: f.Name})
	}
	return list, bad, nil
}

// GameLogStreamer is a LogsRemote that hands the game-log listing's
// files over as they come (*apiclient.Client is one): a pull's first
// folders are fetched, and its local folders read, while the server still
// lists the last ones.
type GameLogStreamer interface {
	GameLogsEach(ctx context.Context, each func(api.GameLogFile)) error
}

// planGameLogs lists the game-log tree, each file keeping its
// tree-relative path, a folder's files emitted at a time. Every hour file
// is treated as growing: the contract says a changed size means the
// client fetches the tail. A path the server lists that is not of the
// contract's shape is refused, so a server cannot make the client write
// outside dir; so is one that sync would refuse (nameFault), so that no
// folder is named with a newline.
func planGameLogs(ctx context.Context, remote LogsRemote, dir string, emit func([]*fileJob, []Failure)) error {
	p := &gameLogPlan{dir: dir, emit: emit}
	var err error
	if s, ok := remote.(GameLogStreamer); ok {
		err = s.GameLogsEach(ctx, p.add)
	} else {
		var l api.GameLogListing
		if l, err = remote.GameLogs(ctx); err == nil {
			for _, f := range l.Files {
				p.add(f)
			}
		}
	}
	p.flush()
	return err
}

// gameLogPlan groups the game-log listing's files by folder, as the
// listing (sorted by path) gives them, and checks each folder's path once.
type gameLogPlan struct {
	dir    string
	emit   func([]*fileJob, []Failure)
	folder string // the folder of the files in list, as listed
	local  string // where it is mirrored
	ok     bool   // whether it is a layout.IsGameLogFolder
	list   []*fileJob
	bad    []Failure
}

func (p *gameLogPlan) add(f api.GameLogFile) {
	if fault := nameFault(f.Path); fault != "" {
		p.bad = append(p.bad, Failure{Op: "fetch", Path: shownName(f.Path), Error: "the server listed it, but " + fault + "; skipped"})
		return
	}
	i := strings.LastIndexByte(f.Path, '/')
	folder, name := f.Path[:max(i, 0)], f.Path[i+1:]
	if i < 0 || folder != p.folder {
		p.flush()
		p.folder, p.ok = folder, i >= 0 && layout.IsGameLogFolder(folder)
		p.local = filepath.Join(p.dir, filepath.FromSlash(folder))
	}
	if _, _, ok := layout.ParseGameLogFileName(name); !ok || !p.ok {
		p.bad = append(p.bad, Failure{Op: "fetch", Path: f.Path, Error: "the server listed a path outside the game-log layout; skipped"})
		return
	}
	p.list = append(p.list, &fileJob{route: api.PathGameLogsFile, key: api.QueryPath, value: f.Path,
		dst: p.local + string(filepath.Separator) + name, size: f.Size, growing: true, label: f.Path}) // name is clean: no filepath.Join
}

// flush emits the files gathered, if any.
func (p *gameLogPlan) flush() {
	if len(p.list) > 0 || len(p.bad) > 0 {
		p.emit(p.list, p.bad)
	}
	p.list, p.bad = nil, nil
}

// reportBad reports listing entries that were refused, each once.
func reportBad(rep Reporter, bad []Failure) PullSummary {
	if rep == nil {
		rep = NopReporter{}
	}
	for _, f := range bad {
		rep.Done(Op{Kind: f.Op, Path: f.Path}, errors.New(f.Error))
	}
	return PullSummary{Failures: bad}
}

// BatchFetcher is a LogsRemote that may send many whole files in one
// answer, the batch download extension of hoster-server; *apiclient.Client
// is one, and uses it only when the server offered it (CanFetchBatch).
// Every other server gets a GET per file.
type BatchFetcher interface {
	CanFetchBatch() bool
	// FetchFiles asks for files whole in one request, and calls each with
	// every file's body, in their order, as the answer streams in (again
	// for a file whose body ended in an error, when it asks again for the
	// files from the one its answer was cut in); the error is for the
	// request or the stream as a whole (the files each was not called for
	// are not fetched).
	FetchFiles(ctx context.Context, files []api.FetchFile, each func(i int, body io.Reader, length int64)) error
}

// puller is a pull's run of the transfer engine: the files of each listing
// are added as it comes (add), the small whole ones fetched in batches
// where the remote offers the batch download, every other one (tails, big
// files) with a request of its own.
type puller struct {
	rep   Reporter
	dirs  *folders
	scans scans
	e     *engine[*fileJob]
	mu    sync.Mutex
	sum   PullSummary
}

// startPull starts the engine's jobs workers, with no file yet.
func startPull(ctx context.Context, remote LogsRemote, jobs int, rep Reporter) *puller {
	if rep == nil {
		rep = NopReporter{}
	}
	f := &puller{rep: rep, dirs: &folders{}, sum: PullSummary{Failures: []Failure{}}}
	var batch func([]*fileJob, bool) []error
	if b, ok := remote.(BatchFetcher); ok && b.CanFetchBatch() {
		batch = func(js []*fileJob, _ bool) []error { return fetchBatch(ctx, remote, b, js, f.dirs) }
	}
	f.e = start(ctx, fetches, jobs, func(j *fileJob) (err error) {
		j.got, err = syncFile(ctx, remote, j, f.dirs)
		return err
	}, batch, f.done, nil)
	return f
}

// addAll adds the files of the listings as they come, scanFolders lists
// at once: each list's local folders are read as it is added.
func (f *puller) addAll(lists <-chan listed) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, scanFolders)
	for l := range lists {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			f.add(l.list, l.bad)
		})
	}
	wg.Wait()
}

// add brings the files of a listing up to date, those not exact
// already, and reports the entries of it that were refused (bad).
func (f *puller) add(list []*fileJob, bad []Failure) {
	got := reportBad(f.rep, bad) // the refused entries, and the files exact already
	missing := f.scans.scan(list)
	var todo []*fileJob
	var total int64
	for _, j := range list {
		if j.local == j.size {
			got.Unchanged++
			continue
		}
		todo = append(todo, j)
		total += j.bytes()
	}
	f.mu.Lock()
	f.sum.add(got)
	f.mu.Unlock()
	if len(todo) > 0 {
		f.rep.Begin("fetch", len(todo), total)
	}
	f.stage(todo, missing)
	f.e.add(todo)
}

// stage sends the files of todo whose folder is missing into that
// folder's hidden one, to be put in place whole (folders).
func (f *puller) stage(todo []*fileJob, missing map[string]bool) {
	if len(missing) == 0 {
		return
	}
	byDir := map[string][]*fileJob{}
	for _, j := range todo {
		if dir := filepath.Dir(j.dst); missing[dir] {
			byDir[dir] = append(byDir[dir], j)
		}
	}
	for dir, js := range byDir {
		if f.dirs.expect(dir, path.Dir(js[0].label), len(js)) {
			for _, j := range js {
				j.staged = true
			}
		}
	}
}

// done records how one file's fetch ended.
func (f *puller) done(j *fileJob, err error) {
	if err != nil {
		err = errors.New(pullCause(err))
	}
	f.mu.Lock()
	if err != nil {
		f.sum.Failures = append(f.sum.Failures, Failure{Op: "fetch", Path: j.label, Error: err.Error()})
	} else {
		f.sum.Fetched++
		f.sum.Bytes += j.got.n
		if j.got.kept != nil {
			f.sum.Kept = append(f.sum.Kept, *j.got.kept)
		}
	}
	f.mu.Unlock()
	f.rep.Done(Op{Kind: "fetch", Path: j.label, Size: j.got.n}, err)
	if j.staged {
		if label, err := f.dirs.landed(filepath.Dir(j.dst)); err != nil {
			f.folderFailed(label, err)
		}
	}
}

// folderFailed records that a new folder (label, as the listing names it)
// could not be put in place: the files fetched into it are not in the
// mirror.
func (f *puller) folderFailed(label string, err error) {
	err = fmt.Errorf("%s (its files fetched in this run are not kept; the next run fetches them again)", cause(err))
	f.mu.Lock()
	f.sum.Failures = append(f.sum.Failures, Failure{Op: "fetch", Path: label, Error: err.Error()})
	f.mu.Unlock()
	f.rep.Done(Op{Kind: "fetch", Path: label}, err)
}

// wait returns what the pull did once every file added is done.
func (f *puller) wait() PullSummary {
	f.e.wait()
	for label, err := range f.dirs.close() {
		f.folderFailed(label, err)
	}
	sort.Slice(f.sum.Kept, func(a, b int) bool { return f.sum.Kept[a].Path < f.sum.Kept[b].Path })
	return f.sum
}

// fetchBatch fetches js whole in one batch download, each written in place
// by the rules of a whole file (receive): nothing outside the mirror (the
// local paths are the listing's, checked; the answer names none), a body
// longer than a frozen file's listed size refused, a growing one's taken
// up to it. What a batch that failed did not bring is then fetched a file
// at a time (fetchEach).
func fetchBatch(ctx context.Context, remote LogsRemote, b BatchFetcher, js []*fileJob, dirs *folders) []error {
	files := make([]api.FetchFile, len(js))
	for i, j := range js {
		files[i] = api.FetchFile{Route: j.route}
		switch j.key {
		case api.QueryWhich:
			files[i].Which = j.value
		case api.QueryName:
			files[i].Name = j.value
		case api.QueryPath:
			files[i].Path = j.value
		}
	}
	errs := make([]error, len(js))
	called := make([]bool, len(js))
	err := b.FetchFiles(ctx, files, func(i int, body io.Reader, length int64) {
		called[i] = true
		js[i].got, errs[i] = receive(js[i], body, length, dirs)
	})
	for i := range js {
		if !called[i] {
			errs[i] = err
			if err == nil {
				errs[i] = errors.New("the server's batch answer ended before this file (nothing was written; the next run fetches it again)")
			}
		}
	}
	if err != nil {
		fetchEach(ctx, remote, js, errs, dirs)
	}
	return errs
}

// fetchEach fetches, a file at a time, each file of js with an error in
// errs, and puts its own result there: after a batch answer cut where
// asking again did not get past (a file that shrank as it was sent cuts
// each answer in it), the cut costs that file only. Once a file finds the
// server gone, or the pull is cancelled, the rest keep their errors.
func fetchEach(ctx context.Context, remote LogsRemote, js []*fileJob, errs []error, dirs *folders) {
	for i, j := range js {
		if errs[i] == nil {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		j.got, errs[i] = syncFile(ctx, remote, j, dirs)
		if unreachable(errs[i]) {
			return
		}
	}
}

// uniq drops the jobs whose local file an earlier job of a listing
// writes already: the contract lists each file once, and a listing that
// names one again (a million times, from a broken or hostile server) gets
// it fetched once, at its first listed size. Its failure, if any, names
// the first repeated file and counts the repeats.
// While the files come in the order of their local paths, as a listing
// sorted by path gives them, none can repeat one before it, and none is
// looked up: the files seen are put in a map only when one comes out of
// order.
type uniq struct {
	seen    map[string]bool // nil while the files came in order
	kept    []string        // the files seen, while they came in order
	first   string
	repeats int
}

// only is list without the jobs of files seen already.
func (u *uniq) only(list []*fileJob) []*fileJob {
	out := list[:0:0]
	for _, j := range list {
		if u.seen == nil && (len(u.kept) == 0 || j.dst > u.kept[len(u.kept)-1]) {
			u.kept = append(u.kept, j.dst)
			out = append(out, j)
			continue
		}
		if u.seen == nil {
			u.seen = make(map[string]bool, len(u.kept))
			for _, d := range u.kept {
				u.seen[d] = true
			}
			u.kept = nil
		}
		if u.seen[j.dst] {
			if u.repeats == 0 {
				u.first = j.label
			}
			u.repeats++
			continue
		}
		u.seen[j.dst] = true
		out = append(out, j)
	}
	if u.repeats == 0 {
		return list
	}
	return out
}

// failure is the one failure of the repeats, if there were any.
func (u *uniq) failure() *Failure {
	if u.repeats == 0 {
		return nil
	}
	return &Failure{Op: "fetch", Path: u.first, Error: fmt.Sprintf(
		"the server listed it more than once (%d repeated entries in its listing); each file was fetched once, at its first listed size", u.repeats)}
}

// pullCause is err as a failure line shows it beside the file's name: the
// client's errors without their operation, local file errors without the
// paths (the file's own, and its temporary one).
func pullCause(err error) string {
	var le *os.LinkError
	var pe *fs.PathError
	switch {
	case errors.As(err, &le):
		return "putting the file in place: " + le.Err.Error()
	case errors.As(err, &pe):
		return pe.Op + ": " + pe.Err.Error()
	}
	return cause(err)
}

// fetched is what bringing one file up to date did.
type fetched struct {
	n    int64 // bytes received
	kept *Kept // the archived copy set aside, if it was
}

// syncFile brings one local file up to date.
func syncFile(ctx context.Context, remote LogsRemote, j *fileJob, dirs *folders) (fetched, error) {
	if _, err := dirs.folder(filepath.Dir(j.dst)); err != nil {
		return fetched{}, err
	}
	local := int64(-1)
	if j.staged {
		// In a new folder's hidden one, which nothing else writes into:
		// fetched whole.
	} else if fi, err := os.Stat(j.dst); err == nil {
		local = fi.Size()
	}
	if j.growing && local <= j.size && !j.staged {
		return fetchTail(ctx, remote, j, max(local, 0), dirs)
	}
	f, err := remote.Fetch(ctx, j.route, j.query(), 0)
	if err != nil {
		return fetched{}, err
	}
	defer f.Body.Close()
	return receive(j, f.Body, f.Length, dirs)
}

// receive writes body, whose length is given (-1: not known), whole in
// place of j's local file (pkg/atomicfile), only once it has exactly the
// listed size; it reads no more of it than that. A frozen file whose body
// has more is refused: the server sent what it did not list. A growing one
// may have grown since the listing: its first j.size bytes are taken, the
// rest is the next run's tail. A local copy (one there was when the run
// began: where there was none, none is looked for, a syscall saved on
// each of a first pull's files) that the body does not begin with (the
// server's copy shrank, or was rewritten) is first set aside (keepAside),
// so the mirror loses none of its bytes. On any failure, nothing is
// written.
func receive(j *fileJob, body io.Reader, length int64, dirs *folders) (fetched, error) {
	if !j.growing && length > j.size {
		return fetched{}, fmt.Errorf("the server sent %d bytes where it listed %d (nothing was written)", length, j.size)
	}
	limit := j.size
	if !j.growing {
		limit++ // one byte more tells a longer body
	}
	folder, err := dirs.folder(filepath.Dir(j.dst))
	if err != nil {
		return fetched{}, err
	}
	var old *prefixCheck
	if j.local >= 0 { // there was a local copy when the run began
		if old, err = archivedCopy(j.dst); err != nil {
			return fetched{}, err
		}
	}
	var r io.Reader = io.LimitReader(body, limit)
	if old != nil {
		r = io.TeeReader(r, old)
	}
	var got fetched
	var aside string
	var refused error
	n, err := folder.Copy(filepath.Base(j.dst), r, 0o644, func(n int64) error {
		switch {
		case n > j.size:
			refused = fmt.Errorf("the server sent more than the %d bytes it listed (nothing was written)", j.size)
		case n < j.size:
			refused = fmt.Errorf("received %d bytes, the listing said %d (nothing was written; the next run fetches it again)", n, j.size)
		case old != nil && !old.continued():
			var err error
			if aside, err = keepAside(j.dst); err != nil {
				refused = fmt.Errorf("setting the archived copy aside (the server's copy no longer begins with it): %w (nothing was written)", err)
				break
			}
			got.kept = &Kept{Path: j.label, As: j.label + strings.TrimPrefix(aside, j.dst),
				Why: fmt.Sprintf("the server's copy, %d bytes, does not begin with the %d bytes archived", n, old.size)}
		}
		return refused
	})
	got.n = n
	if err != nil && aside != "" {
		os.Remove(aside) // the archived copy is still in place
		got.kept = nil
	}
	switch {
	case err == nil:
		return got, nil
	case refused != nil && errors.Is(err, refused):
		return got, refused
	case errors.Is(err, atomicfile.ErrNotRegular):
		return got, fmt.Errorf("putting the file in place: %w", atomicfile.ErrNotRegular)
	}
	if cause := errors.Unwrap(err); cause != nil {
		err = cause // atomicfile's error names the local path, which the caller names already
	}
	return got, fmt.Errorf("receiving: %w (nothing was written; the next run fetches it again)", err)
}

// prefixCheck learns whether a body begins with the bytes of the local
// copy it is to replace: the body's first size bytes are written to it as
// they are received, and their hash compared with the copy's.
type prefixCheck struct {
	want []byte // the local copy's sha256
	size int64  // its length
	h    hash.Hash
	left int64 // bytes still to hash
}

func (p *prefixCheck) Write(b []byte) (int, error) {
	m := min(int64(len(b)), p.left)
	p.h.Write(b[:m])
	p.left -= m
	return len(b), nil
}

// continued reports whether the body began with the local copy.
func (p *prefixCheck) continued() bool {
	return p.left == 0 && bytes.Equal(p.h.Sum(nil), p.want)
}

// archivedCopy is the check of a body against the local file at dst, or
// nil where there is no local file with bytes to lose (none, or empty, or
// not a regular file, which atomicfile refuses to replace).
func archivedCopy(dst string) (*prefixCheck, error) {
	f, err := os.Open(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	return &prefixCheck{want: h.Sum(nil), size: n, h: sha256.New(), left: n}, nil
}

// maxKept bounds the archived copies set aside for one file.
const maxKept = 1000

// keepAside links the local file at dst under a name of its own beside it,
// <name>.kept-<n> with the first n free, and returns that path: the
// server's copy can then take dst's place without losing a byte of it. A
// link never replaces what is there.
func keepAside(dst string) (string, error) {
	for i := 1; i <= maxKept; i++ {
		as := fmt.Sprintf("%s.kept-%d", dst, i)
		err := os.Link(dst, as)
		if err == nil {
			return as, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			var le *os.LinkError
			if errors.As(err, &le) {
				err = le.Err // the paths are the caller's to name
			}
			return "", err
		}
	}
	return "", fmt.Errorf("%s.kept-1 to -%d are all taken", filepath.Base(dst), maxKept)
}

// fetchTail appends the bytes past from, up to the listed size: what the
// file grew since the listing is the next run's. Only a 206 starting exactly
// at from is appended; a 200 with a body means the server ignored the
// Range, and the whole body replaces the file (receive); an empty 200 means
// there is nothing new. If the transfer fails part-way, the file is cut
// back to from.
func fetchTail(ctx context.Context, remote LogsRemote, j *fileJob, from int64, dirs *folders) (fetched, error) {
	f, err := remote.Fetch(ctx, j.route, j.query(), from)
	if err != nil {
		return fetched{}, err
	}
	defer f.Body.Close()
	if f.Status == 200 {
		if f.Length == 0 {
			if from == 0 {
				// An empty file on the server: mirror it as empty.
				return fetched{}, os.WriteFile(j.dst, nil, 0o644)
			}
			return fetched{}, nil
		}
		return receive(j, f.Body, f.Length, dirs)
	}
	if f.Start != from {
		return fetched{}, fmt.Errorf("the server sent bytes from %d, not from %d; nothing was written", f.Start, from)
	}
	want := j.size - from
	if f.Length >= 0 {
		want = min(want, f.Length) // the file is shorter now than listed: what there is
	}
	out, err := os.OpenFile(j.dst, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fetched{}, err
	}
	if _, err := out.Seek(from, io.SeekStart); err != nil {
		out.Close()
		return fetched{}, err
	}
	n, err := io.Copy(out, io.LimitReader(f.Body, want))
	if err == nil && n != want {
		err = fmt.Errorf("received %d of %d bytes", n, want)
	}
	if err != nil {
		out.Truncate(from)
		out.Close()
		return fetched{}, fmt.Errorf("receiving: %w (cut back to %d bytes; the next run continues)", err, from)
	}
	return fetched{n: n}, out.Close()
}
