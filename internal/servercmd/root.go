// Package servercmd is the hoster-server command line: cobra commands that
// read flags and HOSTER_SERVER_* environment variables, then start the
// packages that do the work.
package servercmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/hoster-dev/hoster/internal/version"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/spf13/cobra"
)

// Main runs hoster-server with args and returns the exit status: 0 done,
// 1 failed, 2 usage error.
func Main(args []string, out, errOut io.Writer) int {
	root := Command(out, errOut)
	root.SetArgs(args)
	_, _, err := root.Find(args)
	if err != nil {
		err = usageError{err} // no such command
	} else {
		err = root.Execute()
	}
	if err != nil {
		fmt.Fprintf(errOut, "hoster-server: %v\n", err)
		if errors.As(err, new(usageError)) {
			return 2
		}
		return 1
	}
	return 0
}

// Command is the hoster-server command tree, writing to out and errOut
// (Main runs it; the CLI reference in docs/cli is generated from it).
func Command(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "hoster-server",
		Short:         "Run hoster games and the Sync and tools APIs",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, add := range []func(out, errOut io.Writer) *cobra.Command{newServeCmd, newInitCmd, newRemoveNodeCmd, newVersionCmd, newWorkerCmd} {
		root.AddCommand(add(out, errOut))
	}
	return root
}

func newVersionCmd(out, _ io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the server version and API version",
		Args:  usageArgs(cobra.NoArgs),
		Run: func(*cobra.Command, []string) {
			fmt.Fprintf(out, "hoster-server %s (api %d)\n", version.Version, api.Version)
		},
	}
}
