package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/httptestutil"
	"github.com/nats-io/nats.go/jetstream"
)

// others is addrs without its i-th.
func others(addrs []string, i int) []string {
	var o []string
	for j, a := range addrs {
		if j != i {
			o = append(o, a)
		}
	}
	return o
}

// joinFleet joins n embedded nodes on loopback, each with a data folder of
// its own, and closes them at the test's end.
func joinFleet(t testing.TB, n int) []*Node {
	t.Helper()
	addrs := httptestutil.FreeAddrs(t, n)
	nodes := make([]*Node, n)
	errs := make(chan error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		go func() {
			var err error
			nodes[i], err = Join(ctx, Options{Name: fmt.Sprintf("n%d", i), Listen: addrs[i], Peers: others(addrs, i), Dir: t.TempDir()})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.Close()
		}
	})
	return nodes
}

func TestThreeNodesShareABucket(t *testing.T) {
	nodes := joinFleet(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, nd := range nodes {
		if nd.Name() != fmt.Sprintf("n%d", i) || nd.ID() == "" || nd.Replicas() != 3 || nd.Conn() == nil || nd.JetStream() == nil {
			t.Fatalf("node %d: name %q, id %q, replicas %d", i, nd.Name(), nd.ID(), nd.Replicas())
		}
	}
	a, err := nodes[0].KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	c, err := nodes[2].KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "test"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Get(ctx, "k")
	if err != nil || string(e.Value()) != "v" {
		t.Fatalf("node 2 read %v, %v", e, err)
	}
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; r != 3 {
		t.Fatalf("the bucket has %d replicas, want 3", r)
	}
}

func TestOneNodeNeedsNoPeers(t *testing.T) {
	nodes := joinFleet(t, 1)
	if nodes[0].Replicas() != 1 {
		t.Fatalf("one node: %d replicas, want 1", nodes[0].Replicas())
	}
}

func TestJoinRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Name: "x"},
		{Name: "x", URLs: []string{"nats://127.0.0.1:1"}, Listen: "127.0.0.1:0", Dir: "d"},
		{Name: "x", Listen: "127.0.0.1:0"},
		{Name: "x", URLs: []string{"http://127.0.0.1:1"}},
		{Name: "x", Listen: "nohostport", Dir: "d"},
	} {
		if _, err := Join(context.Background(), o); err == nil {
			t.Errorf("Join(%+v) succeeded", o)
		}
	}
}
