package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/hoster-dev/hoster/pkg/store"
)

// externalFleet starts an external NATS with JetStream in process, on a
// loopback port of its own choosing, with the server's defaults (1 MiB
// max_payload), and joins n nodes to it.
func externalFleet(t *testing.T, n int) []*Node {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: filepath.Join(t.TempDir(), "jetstream"), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("the external NATS is not ready after 30s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes []*Node
	for i := range n {
		nd, err := Join(ctx, Options{Name: fmt.Sprintf("x%d", i), URLs: []string{ns.ClientURL()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		nodes = append(nodes, nd)
	}
	return nodes
}

// bigGame writes files files of a game on sn's disk, each with a path of
// about 200 bytes, and returns their changes and the tree: a manifest of
// 6,000 of them is some 1.5 MB of JSON. The bodies are few, so that the
// test spends its time on the manifest.
func (sn *syncNode) bigGame(t *testing.T, game string, files int) ([]store.Change, map[string]string) {
	t.Helper()
	long := strings.Repeat("a-rather-long-folder-name/", 7)
	var changes []store.Change
	tree := map[string]string{}
	for i := range files {
		p := fmt.Sprintf("a.com/%s/%s%05d.txt", game, long, i)
		w, err := sn.st.Write(p, strings.NewReader(fmt.Sprint(i%10)), 0)
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, store.Change{Path: p, SHA256: w.SHA256})
		tree[p] = w.SHA256
	}
	return changes, tree
}

// TestManifestOverMaxPayloadIsPublished: a game whose manifest is larger
// than the largest message the fleet's NATS takes (1 MiB, an external
// NATS's default) is published, through the object store, and reaches the
// other node. (Before, the manifest's compare-and-set was refused with
// "nats: maximum payload exceeded", tried again until the publish's 30 s
// ran out, and the sync failed.)
func TestManifestOverMaxPayloadIsPublished(t *testing.T) {
	syncs := startSyncs(t, externalFleet(t, 2))
	a, b := syncs[0], syncs[1]
	changes, tree := a.bigGame(t, "big", 6000)
	release := a.sync.Hold("a.com", "big")
	err := a.sync.Publish(changes)
	release()
	if err != nil {
		t.Fatal(err)
	}
	b.waitTree(t, tree)
	if got, _ := b.sync.Tree(); len(got) != len(tree) {
		t.Fatalf("node b's published tree has %d files, want %d", len(got), len(tree))
	}
}
