package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hoster-dev/hoster/internal/version"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/spf13/cobra"
)

func newGenCmd(ios *IO, g *globals) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "gen [ROOT]",
		Short: "Generate hoster.server.js and hoster.client.js for every game under ROOT",
		Long: `gen bundles each game's hook files into hoster.server.js (run by the server)
and writes hoster.client.js (the browser library) and hoster.client.d.ts beside
it, and hoster-env.d.ts (the hooks' types, for editors and tsc; never pushed)
with a tsconfig.json when the game has none. Every problem of every game is
reported, with file, line and column; a game with problems gets no files, the
others still do. ROOT defaults to the current directory.

--check also runs the TypeScript compiler (tsc, from PATH or npx) over each
game and reports its errors like gen's own: a game with type errors is not
generated either (its hoster.server.js and hoster.client.js stay as they were;
only hoster-env.d.ts, which tsc checked against, is brought up to date).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			_, err := runGen(ctxOrBackground(cmd.Context()), ios, g, root, check)
			return err
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "also type-check each game with the TypeScript compiler (tsc, from PATH or npx)")
	return cmd
}

// genReport is the --json summary of a gen.
type genReport struct {
	Games     []gen.GameResult `json:"games"`
	Generated int              `json:"generated"`
	Failed    int              `json:"failed"`
	Elapsed   float64          `json:"elapsed"`
}

// runGen generates every game under root, reports on ios (a line per
// generated game, every problem, or with --json one summary object), and
// returns an error carrying the exit status when anything failed.
func runGen(ctx context.Context, ios *IO, g *globals, root string, check bool) (gen.Result, error) {
	start := time.Now()
	out := newOutput(ios, g)
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return gen.Result{}, failAt(ExitUsage, "read", root, fmt.Errorf("generating: %s is not a directory", root))
	}
	opts := gen.Options{Release: version.Release()}
	if check {
		// Before anything is written: without a compiler, nothing is.
		tsc, err := gen.FindTSC(ctx, root)
		if err != nil {
			return gen.Result{}, failAt(ExitUsage, "type-check", "", err)
		}
		opts.Check = func(root, dir string) ([]gen.Problem, error) { return gen.Check(ctx, tsc, root, dir) }
	}
	res, err := gen.GenerateWith(root, opts)
	if err != nil {
		return res, failAt(ExitFailed, "generate", root, fmt.Errorf("generating: %w", err))
	}
	report := genReport{Games: res.Games, Elapsed: time.Since(start).Seconds()}
	if report.Games == nil {
		report.Games = []gen.GameResult{}
	}
	for _, gr := range res.Games {
		if len(gr.Problems) > 0 {
			report.Failed++
			for _, p := range gr.Problems {
				out.Fail(problemFailure(p))
				if !g.JSON {
					fmt.Fprintf(ios.ErrOut, "%s\n", p)
				}
			}
			continue
		}
		report.Generated++
		out.Status("generated %s", gr.Summary())
	}
	out.Report(report)
	if report.Failed > 0 {
		return res, withExit(ExitFailed, fmt.Errorf("generating: %d of %d games have problems and were not generated", report.Failed, len(res.Games)))
	}
	if len(res.Games) == 0 {
		return res, failAt(ExitFailed, "generate", root, errors.New("generating: no games found (a game is <domain>/<game>/hoster-game.json)"))
	}
	return res, nil
}
