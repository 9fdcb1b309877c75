package cli

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/hoster-dev/hoster/internal/version"
	"github.com/hoster-dev/hoster/pkg/dev"
	"github.com/spf13/cobra"
)

func newDevCmd(ios *IO, g *globals) *cobra.Command {
	port := dev.DefaultPort
	cmd := &cobra.Command{
		Use:   "dev [ROOT]",
		Short: "Run ROOT's games on a private server on 127.0.0.1, kept in step on every save",
		Long: `dev starts a private server on 127.0.0.1 (--port, default 8080; another free
port when that one is taken), generates and syncs ROOT (default .) into a
temporary hosting root, prints http://<domain>.localhost:<port>/<game>/ for
each game, and syncs again on every save. Its playground, at
http://localhost:<port>/, lists the instances live (players, state fields,
tick and send timings, hook errors), opens players side by side and
inspects an instance's state and a player's view. Its terminal shows each reload,
generator problems, hook failures, instance.log lines and players joining and
leaving. Nothing needs configuring: no server, no token. Ctrl-C stops it and
removes the temporary root.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := "."
			if len(args) == 1 {
				root = args[0]
			}
			if g.JSON {
				return withExit(ExitUsage, errors.New("dev has no --json: it runs until Ctrl-C, printing as it goes"))
			}
			if port < 0 || port > 65535 {
				return withExit(ExitUsage, errors.New("--port must be between 0 and 65535"))
			}
			ctx, stop := signal.NotifyContext(ctxOrBackground(cmd.Context()), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err := dev.Run(ctx, dev.Options{Root: root, Port: port, Out: ios.Out, Log: ios.ErrOut, Release: version.Release()})
			switch {
			case errors.Is(err, dev.ErrNotDir):
				return withExit(ExitUsage, err)
			case err != nil:
				return withExit(ExitFailed, err)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&port, "port", dev.DefaultPort, "port on 127.0.0.1 (0: any free port)")
	return cmd
}
