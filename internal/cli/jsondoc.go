package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hoster-dev/hoster/pkg/gen"
)

// failure is one thing that went wrong, as a --json document lists it:
// what was being done, where (a file, a game, the server), and the cause.
// mirror.Failure is the same object without a line.
type failure struct {
	// Op is what was being done: "generate", "upload", "delete", "test",
	// "fetch", "pull", "read", "configure", "connect", "usage" (the
	// command line), ...
	Op string `json:"op"`
	// Path is where: a file or game under ROOT, a mirror folder, the
	// config file or the server's URL; empty when there is no one place.
	Path string `json:"path,omitempty"`
	// Line and Column place it in Path's file, when known.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// Error is the cause.
	Error string `json:"error"`
}

// problemFailure lists a generator (or tsc) problem.
func problemFailure(p gen.Problem) failure {
	return failure{Op: "generate", Path: p.File, Line: p.Line, Column: p.Col, Error: p.Msg}
}

// jsonDoc is what a --json run prints on stdout: the command's report and,
// beside it whatever happened, its failures, the exit status and what the
// status means. Commands fill it through their output; run renders it,
// once, after the command has returned, so no failure path can skip it.
type jsonDoc struct {
	mu       sync.Mutex
	report   any
	failures []failure
}

// exitMeanings say what each exit status means, in the document.
var exitMeanings = map[int]string{
	ExitOK:      "done",
	ExitFailed:  "something failed; the rest was still done, and each failure is listed",
	ExitUsage:   "usage or configuration error; nothing was done",
	ExitVersion: "the client's and the server's API versions differ; nothing was done",
}

// render writes the document for a run of command that ended with code
// and err (nil on success). A report's own "failures" come first, then
// those added along the way; an error that none of them names becomes one.
func (d *jsonDoc) render(w io.Writer, command string, code int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fields := map[string]json.RawMessage{}
	if d.report != nil {
		b, _ := json.Marshal(d.report)
		_ = json.Unmarshal(b, &fields) // every report is an object
	}
	var fails []failure
	if raw, ok := fields["failures"]; ok {
		_ = json.Unmarshal(raw, &fails)
	}
	fails = append(fails, d.failures...)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != "" && len(fails) == 0 {
		fails = append(fails, errorFailure(command, code, err))
	}
	if fails == nil {
		fails = []failure{}
	}
	set := func(key string, v any) {
		b, _ := json.Marshal(v)
		fields[key] = b
	}
	set("failures", fails)
	set("exitCode", code)
	set("exit", exitMeanings[code])
	if msg != "" {
		set("error", msg)
	}
	b, _ := json.MarshalIndent(fields, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// errorFailure lists the error a command ended with: its what and where
// when it carries them (failAt), else the command's name.
func errorFailure(command string, code int, err error) failure {
	f := failure{Op: command, Error: err.Error()}
	var ee *exitError
	if errors.As(err, &ee) {
		f.Error = ee.err.Error()
		if ee.op != "" {
			f.Op, f.Path = ee.op, ee.path
		}
	}
	switch {
	case f.Op != command:
	case code == ExitUsage:
		f.Op = "usage"
	case code == ExitVersion:
		f.Op = "connect"
	}
	return f
}
