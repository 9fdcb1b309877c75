package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hoster-dev/hoster/internal/version"
	"github.com/hoster-dev/hoster/pkg/gametest"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/spf13/cobra"
)

func newTestCmd(ios *IO, g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "test [ROOT]",
		Short: "Run each game's tests in <game>/_tests/ against its real module",
		Long: `test generates every game under ROOT (default .), then runs the test files in
each game's _tests/ folder (*.test.js, *.test.ts) against the game's real
hoster.server.js in the real runtime, on a virtual clock: scripted players join
(rooms included), send commands, see updates, drop and resume exactly as on a
server, and game.advance(seconds) runs the ticks, send rounds and resume graces
that fall due without waiting for them.

It prints an ok or FAIL line per test, each failure with the test's own
file:line, and a closing "N passed, M failed"; it exits 1 when a test failed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			return runTest(ios, g, root)
		},
	}
}

// testReport is the --json summary of hoster test.
type testReport struct {
	gametest.Summary
	Games int `json:"games"`
}

func runTest(ios *IO, g *globals, root string) error {
	out := newOutput(ios, g)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return failAt(ExitUsage, "read", root, fmt.Errorf("testing: %s is not a directory", root))
	}
	res, err := gen.GenerateWith(root, gen.Options{Release: version.Release()})
	if err != nil {
		return failAt(ExitFailed, "generate", root, fmt.Errorf("testing: %w", err))
	}
	for _, p := range res.Problems() {
		out.Fail(problemFailure(p))
		fmt.Fprintf(ios.ErrOut, "%s\n", p)
	}
	lines := ios.Out
	if g.JSON || g.Quiet {
		lines = failuresOnly{ios.ErrOut}
	}
	var report testReport
	var broken int
	for _, gr := range res.Games {
		files, err := gametest.Files(filepath.Join(root, filepath.FromSlash(gr.Dir)))
		if err != nil {
			return withExit(ExitFailed, fmt.Errorf("testing %s: %w", gr.Dir, err))
		}
		if len(files) == 0 {
			continue
		}
		report.Games++
		if len(gr.Problems) > 0 {
			broken++
			continue
		}
		sum, err := gametest.RunGame(root, gr.Dir, gametest.Real, lines)
		if err != nil {
			return withExit(ExitFailed, fmt.Errorf("testing %s: %w", gr.Dir, err))
		}
		for _, r := range sum.Results {
			if !r.Passed {
				out.Fail(testFailure(r))
			}
		}
		report.Results = append(report.Results, sum.Results...)
		report.Passed += sum.Passed
		report.Failed += sum.Failed
	}
	if report.Results == nil {
		report.Results = []gametest.Result{}
	}
	out.Report(report)
	if !g.JSON {
		fmt.Fprintf(ios.Out, "%d passed, %d failed\n", report.Passed, report.Failed)
	}
	switch {
	case broken > 0:
		return withExit(ExitFailed, fmt.Errorf("testing: %d games with tests failed to generate, so their tests did not run", broken))
	case report.Failed > 0:
		return withExit(ExitFailed, errors.New(""))
	case report.Games == 0:
		out.Status("no tests found: a game's tests are <domain>/<game>/%s/*.test.js or *.test.ts", gametest.Folder)
	}
	return nil
}

// testFailure lists a failed test at the test file's line it failed at.
func testFailure(r gametest.Result) failure {
	f := failure{Op: "test", Path: r.File, Error: r.Name + ": " + r.Failure}
	// Where is "file:line:col" when known.
	if file, rest, ok := strings.Cut(r.Where, ":"); ok && file == r.File {
		line, col, _ := strings.Cut(rest, ":")
		f.Line, _ = strconv.Atoi(line)
		f.Column, _ = strconv.Atoi(col)
	}
	return f
}

// failuresOnly passes on the FAIL lines of a test run (to stderr) and drops
// the ok lines, for -q and --json.
type failuresOnly struct{ w io.Writer }

func (f failuresOnly) Write(p []byte) (int, error) {
	if len(p) >= 4 && string(p[:2]) == "ok" {
		return len(p), nil
	}
	return f.w.Write(p)
}
