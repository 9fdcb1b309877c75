package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// streamPeers are the names of the nodes that hold a copy of the stream,
// and whether each is current.
func streamPeers(ctx context.Context, n *Node, stream string) ([]string, bool, error) {
	s, err := n.js.Stream(ctx, stream)
	if err != nil {
		return nil, false, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, false, err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return nil, false, fmt.Errorf("the stream %s has no leader", stream)
	}
	peers, current := []string{info.Cluster.Leader}, true
	for _, r := range info.Cluster.Replicas {
		peers = append(peers, r.Name)
		current = current && r.Current
	}
	slices.Sort(peers)
	return peers, current, nil
}

// TestRemovedNodesCopiesMove: a stopped node removed from an embedded
// fleet through a live node's system account is gone from JetStream: the
// buckets' copies it held move to the node that held none (four nodes) or
// stay on the two left (three) until a node joins, and syncs go on. A
// running node, or one already removed, is refused with why. (Before, an
// embedded node's NATS had no system account and nobody could remove a
// node.)
func TestRemovedNodesCopiesMove(t *testing.T) {
	for _, size := range []int{3, 4} {
		t.Run(fmt.Sprint(size, " nodes"), func(t *testing.T) {
			nodes := joinFleet(t, size)
			syncs := startSyncs(t, nodes[:2])
			a, b := syncs[0], syncs[1]
			const p = "a.com/g/p.txt"
			if err := a.write(p, "v1"); err != nil {
				t.Fatal(err)
			}
			b.waitTree(t, map[string]string{p: sha("v1")})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			before, _, err := streamPeers(ctx, nodes[0], "KV_"+ManifestBucket)
			if err != nil {
				t.Fatal(err)
			}
			var gone *Node // a node holding a copy, and no sync
			for _, n := range nodes[2:] {
				if slices.Contains(before, n.Name()) {
					gone = n
				}
			}
			url := nodes[0].systemURL
			if err := RemoveNode(ctx, url, gone.Name()); err == nil || !strings.Contains(err.Error(), "it is running") {
				t.Fatalf("removing the running %s: %v, want refused as running", gone.Name(), err)
			}
			gone.Close()
			if err := RemoveNode(ctx, url, gone.Name()); err != nil {
				t.Fatal(err)
			}
			waitCopies(ctx, t, nodes[0], min(MaxReplicas, size-1), gone.Name())
			if err := a.write(p, "v2"); err != nil {
				t.Fatal(err)
			}
			b.waitTree(t, map[string]string{p: sha("v2")})
			if err := RemoveNode(ctx, url, gone.Name()); err == nil || !strings.Contains(err.Error(), "JetStream refused") {
				t.Fatalf("removing %s again: %v, want refused by JetStream", gone.Name(), err)
			}
			if size > MaxReplicas {
				return
			}
			// A node that joins later is given the missing copies.
			var peers []string
			for _, n := range nodes[:2] {
				peers = append(peers, n.ns.ClusterAddr().String())
			}
			late, err := Join(ctx, Options{Name: "late", Listen: "127.0.0.1:-1", Peers: peers, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer late.Close()
			waitCopies(ctx, t, nodes[0], MaxReplicas, gone.Name())
		})
	}
}

// waitCopies waits until both of the sync's streams have want current
// copies, none on the node gone.
func waitCopies(ctx context.Context, t *testing.T, n *Node, want int, gone string) {
	t.Helper()
	for _, stream := range []string{"KV_" + ManifestBucket, "OBJ_" + BodyStore} {
		for {
			peers, current, err := streamPeers(ctx, n, stream)
			if err == nil && current && len(peers) == want && !slices.Contains(peers, gone) {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the stream %s is on %v (current %v, %v), want %d nodes without %s", stream, peers, current, err, want, gone)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
