package mirror

import (
	"context"
	"errors"
	"fmt"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hoster-dev/hoster/pkg/api"
)

// LogsRemote is the server side of a pull; *apiclient.Client is one.
type LogsRemote interface {
	Logs(ctx context.Context) (api.LogListing, error)
	Stats(ctx context.Context) (api.StatsListing, error)
	GameLogs(ctx context.Context) (api.GameLogListing, error)
	Fetch(ctx context.Context, route string, query url.Values, offset int64) (*api.Fetched, error)
}

// PullSummary is what a pull did.
type PullSummary struct {
	Fetched   int       `json:"fetched"`   // files whole or appended
	Bytes     int64     `json:"bytes"`     // bytes received
	Unchanged int       `json:"unchanged"` // files already exact
	Failures  []Failure `json:"failures"`
}

func (s *PullSummary) add(o PullSummary) {
	s.Fetched += o.Fetched
	s.Bytes += o.Bytes
	s.Unchanged += o.Unchanged
	s.Failures = append(s.Failures, o.Failures...)
}

// fileJob is one file to bring up to date.
type fileJob struct {
	route   string     // api.PathLogsFile, ...
	query   url.Values // which=, name=, path=
	dst     string     // local path
	size    int64      // listed size
	growing bool       // grows on the server: a larger listing is a new tail
	label   string     // for reports
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
// place only when the byte count is the listed size; a tail is appended only
// from a 206 that starts at the local size, and cut back to that size if the
// transfer fails. Local files the server no longer lists are kept: the
// mirror is an archive.

// PullLogs mirrors the access logs into dir: access.log is the active log,
// access-<ts>.log each rotated one. A rotated log not seen locally before
// means the active log rotated, so the local active copy is started afresh.
func PullLogs(ctx context.Context, remote LogsRemote, dir string, jobs int, rep Reporter) (PullSummary, error) {
	l, err := listInto(ctx, remote.Logs, dir)
	if err != nil {
		return PullSummary{}, err
	}
	var frozen []fileJob
	rotatedNew := false
	for _, r := range l.Rotated {
		name := fmt.Sprintf("access-%d.log", r.TS)
		dst := filepath.Join(dir, name)
		if _, err := os.Stat(dst); errors.Is(err, os.ErrNotExist) {
			rotatedNew = true
		}
		frozen = append(frozen, fileJob{route: api.PathLogsFile, query: url.Values{api.QueryWhich: {strconv.FormatInt(r.TS, 10)}},
			dst: dst, size: r.Size, label: name})
	}
	active := filepath.Join(dir, api.AccessLogName)
	if rotatedNew {
		// The active log rotated since the last run: what we hold of it is
		// now (part of) a rotated file, fetched under its own name.
		if err := os.Remove(active); err != nil && !errors.Is(err, os.ErrNotExist) {
			return PullSummary{}, fmt.Errorf("resetting %s: %w", active, err)
		}
	}
	sum := runJobs(ctx, remote, frozen, jobs, rep)
	if l.Active != nil {
		sum.add(runJobs(ctx, remote, []fileJob{{route: api.PathLogsFile, query: url.Values{api.QueryWhich: {api.WhichActive}},
			dst: active, size: l.Active.Size, growing: true, label: api.AccessLogName}}, 1, rep))
	}
	return sum, nil
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

// statsName is a health day-file name.
var statsName = regexp.MustCompile(`^(cpu|memory|disk|diskio|netio)-\d{4}-\d{2}-\d{2}\.log$`)

// PullStats mirrors the health day-files into dir under their own names. The
// newest file of each type may still grow; the others are frozen.
func PullStats(ctx context.Context, remote LogsRemote, dir string, jobs int, rep Reporter) (PullSummary, error) {
	l, err := listInto(ctx, remote.Stats, dir)
	if err != nil {
		return PullSummary{}, err
	}
	newest := map[string]string{}
	for _, f := range l.Files {
		if f.Name > newest[f.Type] {
			newest[f.Type] = f.Name
		}
	}
	var jobsList []fileJob
	var bad []Failure
	for _, f := range l.Files {
		if !statsName.MatchString(f.Name) {
			bad = append(bad, Failure{Op: "fetch", Path: f.Name, Error: "the server listed a name that is not <type>-YYYY-MM-DD.log; skipped"})
			continue
		}
		jobsList = append(jobsList, fileJob{route: api.PathStatsFile, query: url.Values{api.QueryName: {f.Name}},
			dst: filepath.Join(dir, f.Name), size: f.Size, growing: newest[f.Type] == f.Name, label: f.Name})
	}
	sum := runJobs(ctx, remote, jobsList, jobs, rep)
	sum.add(reportBad(rep, bad))
	return sum, nil
}

// gameLogPath is the shape of a game-log path.
var gameLogPath = regexp.MustCompile(`^[^/_.][^/]*\.[^/]*/[^/_.][^/]*/hoster-processes/[0-9a-f]{12}/(stats|snapshot)-\d{4}-\d{2}-\d{2}-\d{2}\.jsonl$`)

// PullGameLogs mirrors the game-log tree into dir, keeping each file's
// tree-relative path. Every hour file is treated as growing: the contract
// says a changed size means the client fetches the tail. A path the server
// lists that is not of the contract's shape is refused, so a server cannot
// make the client write outside dir.
func PullGameLogs(ctx context.Context, remote LogsRemote, dir string, jobs int, rep Reporter) (PullSummary, error) {
	l, err := remote.GameLogs(ctx)
	if err != nil {
		return PullSummary{}, err
	}
	var jobsList []fileJob
	var bad []Failure
	for _, f := range l.Files {
		if !gameLogPath.MatchString(f.Path) || strings.Contains(f.Path, "..") {
			bad = append(bad, Failure{Op: "fetch", Path: f.Path, Error: "the server listed a path outside the game-log layout; skipped"})
			continue
		}
		jobsList = append(jobsList, fileJob{route: api.PathGameLogsFile, query: url.Values{api.QueryPath: {f.Path}},
			dst: filepath.Join(dir, filepath.FromSlash(f.Path)), size: f.Size, growing: true, label: f.Path})
	}
	sum := runJobs(ctx, remote, jobsList, jobs, rep)
	sum.add(reportBad(rep, bad))
	return sum, nil
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

// runJobs brings every file up to date, jobs at a time.
func runJobs(ctx context.Context, remote LogsRemote, list []fileJob, jobs int, rep Reporter) PullSummary {
	if rep == nil {
		rep = NopReporter{}
	}
	sum := PullSummary{Failures: []Failure{}}
	removeStaleParts(list)
	var todo []fileJob
	for _, j := range list {
		if fi, err := os.Stat(j.dst); err == nil && fi.Size() == j.size {
			sum.Unchanged++
			continue
		}
		todo = append(todo, j)
	}
	sort.SliceStable(todo, func(a, b int) bool { return todo[a].label < todo[b].label })
	var total int64
	for _, j := range todo {
		total += j.size
	}
	if len(todo) > 0 {
		rep.Begin("fetch", len(todo), total)
	}
	var mu sync.Mutex
	parallel(ctx, max(jobs, 1), len(todo), func(i int) {
		j := todo[i]
		n, err := syncFile(ctx, remote, j)
		if err != nil {
			err = errors.New(pullCause(err))
		}
		mu.Lock()
		if err != nil {
			sum.Failures = append(sum.Failures, Failure{Op: "fetch", Path: j.label, Error: err.Error()})
		} else {
			sum.Fetched++
			sum.Bytes += n
		}
		mu.Unlock()
		rep.Done(Op{Kind: "fetch", Path: j.label, Size: n}, err)
	})
	return sum
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

// syncFile brings one local file up to date and returns the bytes received.
func syncFile(ctx context.Context, remote LogsRemote, j fileJob) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(j.dst), 0o755); err != nil {
		return 0, err
	}
	local := int64(-1)
	if fi, err := os.Stat(j.dst); err == nil {
		local = fi.Size()
	}
	if j.growing && local <= j.size {
		return fetchTail(ctx, remote, j, max(local, 0))
	}
	return fetchWhole(ctx, remote, j)
}

// fetchWhole fetches the file into a temporary file beside dst and renames it
// into place only when complete: exactly the listed size for a frozen file,
// at least it for a growing one.
func fetchWhole(ctx context.Context, remote LogsRemote, j fileJob) (int64, error) {
	f, err := remote.Fetch(ctx, j.route, j.query, 0)
	if err != nil {
		return 0, err
	}
	defer f.Body.Close()
	return receive(j, f.Body, func(n int64) bool { return n == j.size || j.growing && n > j.size })
}

// receive writes body whole into j's local file (pkg/atomicfile), if
// complete says the byte count is right; else nothing is written.
func receive(j fileJob, body io.Reader, complete func(n int64) bool) (int64, error) {
	var short error
	n, err := atomicfile.Copy(j.dst, body, 0o644, func(n int64) error {
		if !complete(n) {
			short = fmt.Errorf("received %d bytes, the listing said %d (nothing was written; the next run fetches it again)", n, j.size)
			return short
		}
		return nil
	})
	switch {
	case err == nil:
		return n, nil
	case short != nil && errors.Is(err, short):
		return n, short
	case errors.Is(err, atomicfile.ErrNotRegular):
		return n, fmt.Errorf("putting the file in place: %w", atomicfile.ErrNotRegular)
	}
	if cause := errors.Unwrap(err); cause != nil {
		err = cause // atomicfile's error names the local path, which the caller names already
	}
	return n, fmt.Errorf("receiving: %w (nothing was written; the next run fetches it again)", err)
}

// fetchTail appends the bytes past from. Only a 206 starting exactly at from
// is appended; a 200 with a body means the server ignored the Range, and the
// whole body replaces the file; an empty 200 means there is nothing new. If
// the transfer fails part-way, the file is cut back to from.
func fetchTail(ctx context.Context, remote LogsRemote, j fileJob, from int64) (int64, error) {
	f, err := remote.Fetch(ctx, j.route, j.query, from)
	if err != nil {
		return 0, err
	}
	defer f.Body.Close()
	if f.Status == 200 {
		if f.Length == 0 {
			if from == 0 {
				// An empty file on the server: mirror it as empty.
				return 0, os.WriteFile(j.dst, nil, 0o644)
			}
			return 0, nil
		}
		if from > 0 {
			// The server ignored the Range: replace the file with the whole body.
			j.growing = true
		}
		return replaceWith(j, f.Body)
	}
	if f.Start != from {
		return 0, fmt.Errorf("the server sent bytes from %d, not from %d; nothing was written", f.Start, from)
	}
	out, err := os.OpenFile(j.dst, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	if _, err := out.Seek(from, io.SeekStart); err != nil {
		out.Close()
		return 0, err
	}
	n, err := io.Copy(out, f.Body)
	if err == nil && f.Length >= 0 && n != f.Length {
		err = fmt.Errorf("received %d of %d bytes", n, f.Length)
	}
	if err != nil {
		out.Truncate(from)
		out.Close()
		return 0, fmt.Errorf("receiving: %w (cut back to %d bytes; the next run continues)", err, from)
	}
	return n, out.Close()
}

// replaceWith writes body whole in place of j's local file, if it has at
// least the listed size.
func replaceWith(j fileJob, body io.Reader) (int64, error) {
	return receive(j, body, func(n int64) bool { return n >= j.size })
}
