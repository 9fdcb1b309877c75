// Package cli is the hoster command line: cobra commands that parse flags and
// configuration, then call into pkg/gen, pkg/mirror and pkg/apiclient, which know
// nothing of cobra.
package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// IO is where a command reads and writes; tests substitute buffers.
type IO struct {
	In     io.Reader
	Out    io.Writer // data and --json
	ErrOut io.Writer // progress, status and errors
	// ErrIsTerminal says whether ErrOut is a terminal: a terminal gets a
	// progress bar, anything else one plain line per action.
	ErrIsTerminal bool
	// NewClient makes the client of the server the configuration names
	// (gh's factory): every command that talks to a server takes its
	// client from here. nil means apiclient.NewClient; tests substitute
	// one that sees the configuration or reaches a server of their own.
	NewClient func(apiclient.ClientConfig) (*apiclient.Client, error)
}

// Main runs the hoster command with args and returns the exit status.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	ios := &IO{In: in, Out: out, ErrOut: errOut}
	if f, ok := errOut.(*os.File); ok {
		ios.ErrIsTerminal = term.IsTerminal(int(f.Fd()))
	}
	return run(ios, args)
}

func run(ios *IO, args []string) int {
	root, g := newRootCmd(ios)
	root.SetArgs(args)
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	cmd, err := root.ExecuteC()
	code := exitCode(err)
	if err != nil && err.Error() != "" {
		fmt.Fprintf(ios.ErrOut, "hoster: %v\n", err)
	}
	if g.JSON {
		// One document whatever happened: the one place that prints it.
		g.doc.render(ios.Out, cmd.Name(), code, err)
	}
	return code
}

// Command is the hoster command tree, reading and writing through ios (run
// executes it; the CLI reference in docs/cli is generated from it).
func Command(ios *IO) *cobra.Command {
	root, _ := newRootCmd(ios)
	return root
}

// globals are the flags every command takes.
type globals struct {
	JSON       bool
	Quiet      bool
	ConfigFile string
	Server     string
	Servers    string // --servers: <node>=<URL>,...
	TokenFile  string
	CertSHA256 string
	// InsecureSkipVerify accepts a server certificate that does not
	// verify, when no pin is set (a flag only: never a saved setting).
	InsecureSkipVerify bool

	// doc is the --json document, printed by run.
	doc jsonDoc
}

func newRootCmd(ios *IO) (*cobra.Command, *globals) {
	g := &globals{}
	root := &cobra.Command{
		Use:   "hoster",
		Short: "Push games to a hoster-server and mirror its logs back",
		Long: `hoster generates each game's modules, mirrors a sites tree to a hoster-server,
and mirrors the server's logs back.

  hoster sync ./sites          push only what changed
  hoster pull ./hoster-mirror  mirror the logs

Exit status: 0 done; 1 something failed (the rest was done, each failure
named); 2 usage or configuration error; 3 API version mismatch.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.BoolVar(&g.JSON, "json", false, "print one JSON object on stdout, whatever happens: the summary, the failures, the exit status")
	f.BoolVarP(&g.Quiet, "quiet", "q", false, "print only failures")
	f.StringVar(&g.ConfigFile, "config", "", "config file (default ./hoster.json, then $XDG_CONFIG_HOME/hoster/hoster.json)")
	f.StringVar(&g.Server, "server", "", "server base URL (hoster-config-server)")
	f.StringVar(&g.Servers, "servers", "", "a fleet's servers, <node>=<URL> comma-separated: pull mirrors each into <mirror>/<node>/ (hoster-config-servers)")
	f.StringVar(&g.TokenFile, "token-file", "", "file holding the API token (hoster-config-apiToken)")
	f.StringVar(&g.CertSHA256, "cert-sha256", "", "pin of the server certificate's SHA-256 (hoster-config-certSha256)")
	f.BoolVar(&g.InsecureSkipVerify, "insecure-skip-verify", false, "with no pin, accept a server certificate that does not verify (the token goes to whichever server answers)")
	// Every subcommand, in the order help lists them. Each constructor
	// lives in the file of its command.
	for _, add := range []func(*IO, *globals) *cobra.Command{
		newSyncCmd,
		newGenCmd,
		newDevCmd,
		newTestCmd,
		newNewCmd,
		newPullCmd("pull-logs", "Mirror the access logs", "web-logs", mirror.PartLogs),
		newPullCmd("pull-stats", "Mirror the machine-health day-files", "server-logs", mirror.PartStats),
		newPullCmd("pull-gamelogs", "Mirror the game-log tree (a server run with --variant 1, the default)", "hoster-logs", mirror.PartGameLogs),
		newPullAllCmd,
		newVersionCmd,
	} {
		root.AddCommand(add(ios, g))
	}
	return root, g
}
