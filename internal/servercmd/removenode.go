package servercmd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/hoster-dev/hoster/pkg/fleet"
	"github.com/spf13/cobra"
)

// removeNodeOptions are the flags of hoster-server remove-node.
type removeNodeOptions struct {
	HostingRoot string
	Dir         string // --cluster-dir
}

// removeNodeTimeout bounds a removal: JetStream answers once the removal
// is applied, which takes an election when the removed node led.
const removeNodeTimeout = time.Minute

func newRemoveNodeCmd(out, _ io.Writer) *cobra.Command {
	opts := removeNodeOptions{}
	cmd := &cobra.Command{
		Use:   "remove-node NODE",
		Short: "Remove a stopped node from an embedded fleet's JetStream for good",
		Long: `remove-node removes the node named NODE (its --cluster-node) from the
fleet's JetStream, through the embedded NATS of the node running on this
machine (hoster-server serve --cluster-listen, on the same --hosting-root or
--cluster-dir): JetStream forgets it, and places the copies of the fleet's
data it held on the other nodes (with three nodes left or more; a fleet of
three left with two keeps two copies). NODE must be stopped: a node that
answers is refused. Run it as a user who can read the data folder: the
system account's address is in its nats-system-url while serve runs.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyEnv(cmd.Flags(), nil); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), removeNodeTimeout)
			defer cancel()
			return runRemoveNode(ctx, opts, args[0], out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.HostingRoot, "hosting-root", "/srv/hoster", "the hosting root of this machine's node")
	f.StringVar(&opts.Dir, "cluster-dir", "", "this machine's node's embedded NATS data (default {hosting_root}/"+FleetDir+")")
	return cmd
}

// runRemoveNode removes node through this machine's node, and says so on
// out.
func runRemoveNode(ctx context.Context, o removeNodeOptions, node string, out io.Writer) error {
	dir := o.Dir
	if dir == "" {
		dir = filepath.Join(o.HostingRoot, FleetDir)
	}
	url, err := fleet.ReadSystemURL(dir)
	if err != nil {
		return err
	}
	if err := fleet.RemoveNode(ctx, url, node); err != nil {
		return err
	}
	fmt.Fprintf(out, "removed %s from the fleet: JetStream places the copies it held on the other nodes\n", node)
	return nil
}
