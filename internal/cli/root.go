// Package cli is the hoster command line: cobra commands that parse flags and
// configuration, then call into pkg/gen, pkg/mirror and pkg/api, which know
// nothing of cobra.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// IO is where a command reads and writes; tests substitute buffers.
type IO struct {
	In     io.Reader
	Out    io.Writer // data and --json
	ErrOut io.Writer // progress, status and errors
}

// Main runs the hoster command with args and returns the exit status.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	ios := &IO{In: in, Out: out, ErrOut: errOut}
	root := newRootCmd(ios)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintf(errOut, "hoster: %v\n", ee.err)
		}
		return ee.code
	}
	// Anything cobra itself rejects (unknown flag, wrong arguments) is usage.
	fmt.Fprintf(errOut, "hoster: %v\n", err)
	return ExitUsage
}

func newRootCmd(ios *IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "hoster",
		Short:         "Push games to a hoster-server and mirror its logs back",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, add := range commands {
		root.AddCommand(add(ios))
	}
	return root
}

// commands lists the constructors of the subcommands; each lives in its own
// file and appends itself here in an init function.
var commands []func(*IO) *cobra.Command
