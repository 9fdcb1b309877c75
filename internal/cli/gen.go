package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newGenCmd) }

func newGenCmd(ios *IO, _ *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "gen [ROOT]",
		Short: "Generate hoster.server.js and hoster.client.js for every game under ROOT",
		Long: `gen bundles each game's hook files into hoster.server.js (run by the server)
and writes hoster.client.js (the browser library) and hoster.client.d.ts beside
it. Every problem of every game is reported, with file and line; a game with
problems gets no files, the others still do. ROOT defaults to the current
directory.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			_, err := runGen(ios, root)
			return err
		},
	}
}

// runGen generates every game under root, reports on ios.ErrOut, and
// returns an error carrying the exit status when anything failed.
func runGen(ios *IO, root string) (gen.Result, error) {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return gen.Result{}, withExit(ExitUsage, fmt.Errorf("generating: %s is not a directory", root))
	}
	res, err := gen.Generate(root)
	if err != nil {
		return res, withExit(ExitFailed, fmt.Errorf("generating: %w", err))
	}
	for _, g := range res.Games {
		for _, p := range g.Problems {
			fmt.Fprintf(ios.ErrOut, "%s\n", p)
		}
	}
	if res.Failed() {
		bad := 0
		for _, g := range res.Games {
			if len(g.Problems) > 0 {
				bad++
			}
		}
		return res, withExit(ExitFailed, fmt.Errorf("generating: %d of %d games have problems and were not generated", bad, len(res.Games)))
	}
	if len(res.Games) == 0 {
		return res, withExit(ExitFailed, errors.New("generating: no games found (a game is <domain>/<game>/hoster-game.json)"))
	}
	return res, nil
}
