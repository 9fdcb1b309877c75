package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// The embedded NATS server's users: the node's own connection, in the
// global account (the fleet's JetStream), and the system account's, for
// NATS's administration (RemoveNode).
const (
	nodeUser   = "hoster"
	systemUser = "system"
)

// SystemURLFile is the file in an embedded node's data folder (Options.Dir)
// that holds, while the node runs, the nats:// URL of its NATS server's
// system account, with a password minted at each start: whoever can read
// the data folder (the node's operators) can administer the fleet's NATS
// with it, e.g. remove a node (RemoveNode, or NATS's own CLI). The file is
// mode 600 and removed when the node closes.
const SystemURLFile = "nats-system-url"

// writeSystemURL writes the system account's URL to dir's SystemURLFile.
func (n *Node) writeSystemURL(dir, password string) error {
	u, err := url.Parse(n.ns.ClientURL())
	if err != nil {
		return fmt.Errorf("reading the embedded NATS server's address: %w", err)
	}
	u.User = url.UserPassword(systemUser, password)
	n.systemURL, n.systemFile = u.String(), filepath.Join(dir, SystemURLFile)
	if err := atomicfile.WriteFileUnsynced(n.systemFile, []byte(n.systemURL+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the system account's address for local operators: %w", err)
	}
	return nil
}

// removeSystemURL removes the node's SystemURLFile, unless another node
// (started since on the same folder) wrote its own.
func (n *Node) removeSystemURL() {
	if b, err := os.ReadFile(n.systemFile); err == nil && strings.TrimSpace(string(b)) == n.systemURL {
		os.Remove(n.systemFile)
	}
}

// ReadSystemURL reads the system account's URL of the node whose data
// folder is dir (SystemURLFile).
func ReadSystemURL(dir string) (string, error) {
	p := filepath.Join(dir, SystemURLFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading %s: absent: no node of an embedded fleet runs on this data folder (hoster-server serve --cluster-listen writes it)", p)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// runningWait is how long RemoveNode waits for the node to remove to say
// it is running.
const runningWait = 3 * time.Second

// RemoveNode removes the node named name from the fleet's JetStream for
// good, through the system account's URL of a running node (ReadSystemURL):
// JetStream forgets it as a peer, and the copies it held of each bucket are
// placed on the other nodes that hold none yet, or dropped when there is
// none (a fleet of three left with two keeps two copies). The node must be
// stopped: a node that answers is refused (removed while running, it would
// turn its JetStream off). It returns once the fleet's meta leader applied
// the removal, or ctx ends.
func RemoveNode(ctx context.Context, systemURL, name string) error {
	fail := func(err error) error { return fmt.Errorf("removing the node %s from the fleet: %w", name, err) }
	nc, err := nats.Connect(systemURL, nats.Name("hoster-server remove-node"))
	if err != nil {
		return fail(fmt.Errorf("connecting to this node's NATS server: %w", err))
	}
	defer nc.Close()
	if err := refuseRunning(ctx, nc, name); err != nil {
		return fail(err)
	}
	req, err := json.Marshal(server.JSApiMetaServerRemoveRequest{Server: name})
	if err != nil {
		return fail(err)
	}
	// Only the meta leader answers: none does while one is elected (the
	// node to remove has just stopped, and it led).
	msg, err := nc.RequestWithContext(ctx, server.JSApiRemoveServer, req)
	for errors.Is(err, nats.ErrNoResponders) {
		select {
		case <-ctx.Done():
			return fail(errors.New("JetStream has no leader (is a majority of the nodes up?)"))
		case <-time.After(100 * time.Millisecond):
		}
		msg, err = nc.RequestWithContext(ctx, server.JSApiRemoveServer, req)
	}
	if err != nil {
		return fail(err)
	}
	var resp server.JSApiMetaServerRemoveResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fail(fmt.Errorf("reading JetStream's answer: %w", err))
	}
	if server.IsNatsErr(resp.Error, server.JSClusterServerNotMemberErr) {
		return fail(fmt.Errorf("JetStream refused: %s (no node of that --cluster-node name, or removed already)", resp.Error.Description))
	}
	if resp.Error != nil {
		return fail(fmt.Errorf("JetStream refused: %s", resp.Error.Description))
	}
	if !resp.Success {
		return fail(fmt.Errorf("JetStream did not say it did: %s", msg.Data))
	}
	return nil
}

// refuseRunning fails if the node named name answers a ping of the system
// account within runningWait.
func refuseRunning(ctx context.Context, nc *nats.Conn, name string) error {
	req, err := json.Marshal(server.StatszEventOptions{EventFilterOptions: server.EventFilterOptions{Name: name, ExactMatch: true}})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, runningWait)
	defer cancel()
	_, err = nc.RequestWithContext(wctx, "$SYS.REQ.SERVER.PING.STATSZ", req)
	switch {
	case err == nil:
		return errors.New("it is running: stop it first (removed while running, it would turn its JetStream off)")
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil
	}
	return fmt.Errorf("asking whether it is running: %w", err)
}
