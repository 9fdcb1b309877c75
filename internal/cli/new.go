package cli

import (
	"errors"
	"fmt"

	"github.com/hoster-dev/hoster/pkg/dev"
	"github.com/hoster-dev/hoster/pkg/scaffold"
	"github.com/spf13/cobra"
)

func newNewCmd(ios *IO, g *globals) *cobra.Command {
	var ts, js bool
	cmd := &cobra.Command{
		Use:   "new DOMAIN/GAME",
		Short: "Scaffold a playable game in ./DOMAIN/GAME",
		Long: `new writes a game that plays at once: hoster-game.json, the players' fields,
a join, a move command, a tick, a page (index.html) drawing the players on a
canvas that the arrow keys move, and a test in _tests/ that hoster test passes.
Its hooks and test are TypeScript (--ts, the default, with a tsconfig.json) or
JavaScript (--js).

It refuses to touch a folder that exists. Then: hoster dev . plays it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ts && js {
				return withExit(ExitUsage, errors.New("--ts and --js: choose one"))
			}
			return runNew(ios, g, ".", args[0], js)
		},
	}
	cmd.Flags().BoolVar(&ts, "ts", false, "TypeScript hooks and test (the default)")
	cmd.Flags().BoolVar(&js, "js", false, "JavaScript hooks and test")
	return cmd
}

// newReport is the --json summary of hoster new.
type newReport struct {
	Game     string   `json:"game"`
	Language string   `json:"language"` // "ts" or "js"
	Files    []string `json:"files"`    // written, as paths under the current folder
	URL      string   `json:"url"`      // where hoster dev plays it, on its default port
}

func runNew(ios *IO, g *globals, root, name string, js bool) error {
	domain, game, err := scaffold.ParseName(name)
	if err != nil {
		return withExit(ExitUsage, fmt.Errorf("new game %w", err))
	}
	files, err := scaffold.Write(scaffold.Options{Root: root, Domain: domain, Game: game, JS: js})
	switch {
	case errors.Is(err, scaffold.ErrExists):
		return withExit(ExitUsage, err)
	case err != nil:
		return withExit(ExitFailed, err)
	}
	rep := newReport{Game: domain + "/" + game, Language: "ts", Files: files, URL: dev.URL(domain, game, dev.DefaultPort)}
	if js {
		rep.Language = "js"
	}
	out := newOutput(ios, g)
	out.Report(rep)
	if g.JSON || g.Quiet {
		return nil
	}
	fmt.Fprintf(ios.Out, "created %s: %d files\n\n", rep.Game, len(files))
	fmt.Fprintf(ios.Out, "  hoster dev %s     then open %s in two windows; the arrow keys move you\n", root, rep.URL)
	fmt.Fprintf(ios.Out, "  hoster test %s    runs %s/_tests\n", root, rep.Game)
	fmt.Fprintf(ios.Out, "\nBefore hoster sync, check \"origins\" in %s/hoster-game.json: it allows pages\n"+
		"on https://%s; add any other origin your page is served from.\n", rep.Game, domain)
	return nil
}
