package cli

import (
	"fmt"
	"sync"

	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// output renders a command's progress and result in one of its modes: a
// progress bar on a terminal; one plain line per action when stderr is not a
// terminal (CI logs); only failures with -q; one JSON object on stdout with
// --json. Progress and status go to stderr, data to stdout. It is a
// mirror.Reporter.
type output struct {
	ios   *IO
	json  bool
	quiet bool
	doc   *jsonDoc

	mu       sync.Mutex
	progress *mpb.Progress
	bar      *mpb.Bar
	done     int
	total    int
	kind     string // the bar's phase
	bytes    int64  // the bar's total bytes
}

func newOutput(ios *IO, g *globals) *output {
	return &output{ios: ios, json: g.JSON, quiet: g.Quiet, doc: &g.doc}
}

// bar reports whether a progress bar is drawn.
func (o *output) barMode() bool { return o.ios.ErrIsTerminal && !o.quiet && !o.json }

// lines reports whether a line per action is printed.
func (o *output) lineMode() bool { return !o.ios.ErrIsTerminal && !o.quiet && !o.json }

// Begin starts a phase, or adds to the one under way when it is of the
// same kind: a pull begins fetching each part's files as its listing
// comes.
func (o *output) Begin(kind string, ops int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	done, count := 0, ops
	if o.bar != nil && kind == o.kind && o.bytes > 0 {
		if !o.bar.Completed() {
			o.total += ops
			o.bytes += bytes
			o.bar.SetTotal(o.bytes, false)
			return
		}
		done, count = o.done, o.total+ops // a bar for the bytes added, the files counted on
	}
	o.finishBar()
	if !o.barMode() || ops == 0 {
		return
	}
	o.done, o.total, o.kind, o.bytes = done, count, kind, bytes
	o.progress = mpb.New(mpb.WithOutput(o.ios.ErrOut), mpb.WithWidth(40))
	total := bytes
	unit := decor.CountersKibiByte("% .1f / % .1f")
	if bytes == 0 {
		total = int64(ops) // deletes: count operations
		unit = decor.Any(func(decor.Statistics) string { return "" })
	}
	verb := map[string]string{"upload": "uploading", "delete": "deleting", "fetch": "fetching"}[kind]
	o.bar = o.progress.AddBar(total,
		mpb.PrependDecorators(decor.Name(verb+" ", decor.WC{W: 10}), unit),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			o.mu.Lock()
			defer o.mu.Unlock()
			return fmt.Sprintf(" %d/%d files", o.done, o.total)
		})),
	)
}

// Done reports one operation.
func (o *output) Done(op mirror.Op, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done++
	if o.bar != nil {
		if op.Size > 0 {
			o.bar.IncrInt64(op.Size)
		} else if op.Kind == "delete" {
			o.bar.IncrInt64(1)
		}
	}
	switch {
	case err != nil:
		o.printf("failed: %s %s: %s\n", op.Kind, op.Path, apiclient.Cause(err))
	case o.lineMode():
		past := map[string]string{"upload": "uploaded", "delete": "deleted", "fetch": "fetched"}[op.Kind]
		if op.Size > 0 || op.Kind != "delete" {
			fmt.Fprintf(o.ios.ErrOut, "%s %s (%s)\n", past, op.Path, humanBytes(op.Size))
		} else {
			fmt.Fprintf(o.ios.ErrOut, "%s %s\n", past, op.Path)
		}
	}
}

// printf writes a line to stderr above the bar, if one is drawn.
func (o *output) printf(format string, a ...any) {
	if o.progress != nil {
		fmt.Fprintf(o.progress, format, a...)
		return
	}
	fmt.Fprintf(o.ios.ErrOut, format, a...)
}

// Status prints a status line (not with -q or --json).
func (o *output) Status(format string, a ...any) {
	o.Finish()
	if !o.quiet && !o.json {
		fmt.Fprintf(o.ios.ErrOut, format+"\n", a...)
	}
}

// Notice prints a line that -q does not silence, as it does not a failure:
// something the run did that its user must know (not with --json, whose
// object says it).
func (o *output) Notice(format string, a ...any) {
	o.Finish()
	if !o.json {
		fmt.Fprintf(o.ios.ErrOut, format+"\n", a...)
	}
}

// Warn prints a warning (not with -q).
func (o *output) Warn(msg string) {
	if !o.quiet {
		o.mu.Lock()
		o.printf("warning: %s\n", msg)
		o.mu.Unlock()
	}
}

// Finish stops the bar.
func (o *output) Finish() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finishBar()
}

func (o *output) finishBar() {
	if o.progress == nil {
		return
	}
	o.bar.SetTotal(-1, true)
	p := o.progress
	o.progress, o.bar = nil, nil
	o.mu.Unlock()
	p.Wait()
	o.mu.Lock()
}

// Report sets v, an object, as the command's --json report: run prints it
// once the command returns, with the failures and the exit status beside
// it.
func (o *output) Report(v any) {
	o.doc.mu.Lock()
	o.doc.report = v
	o.doc.mu.Unlock()
}

// Fail adds a failure to the --json document, for one the report itself
// does not hold (the report's own "failures" are listed too).
func (o *output) Fail(f failure) {
	o.doc.mu.Lock()
	o.doc.failures = append(o.doc.failures, f)
	o.doc.mu.Unlock()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
