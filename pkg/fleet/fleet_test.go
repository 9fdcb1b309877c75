package fleet

import (
	"context"
	"fmt"
	"net"
	"strings"
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
	return joinAll(t, n, func(i int, addrs []string) Options {
		return Options{Name: fmt.Sprintf("n%d", i), Listen: addrs[i], Peers: others(addrs, i), Dir: t.TempDir()}
	})
}

// joinAll joins n embedded nodes at once, node i with opts(i, the route
// addresses of all), and closes them at the test's end. The addresses are
// free when picked and taken a moment later: one taken meanwhile (another
// program's outgoing connection took it as its port) fails its node's Join
// with "address already in use", and the fleet is joined again on new ones.
func joinAll(t testing.TB, n int, opts func(i int, addrs []string) Options) []*Node {
	t.Helper()
	for attempt := 1; ; attempt++ {
		nodes, err := tryJoin(n, httptestutil.FreeAddrs(t, n), opts)
		if err == nil {
			t.Cleanup(func() {
				for _, nd := range nodes {
					nd.Close()
				}
			})
			return nodes
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("joining the fleet again on new route ports: %v", err)
	}
}

// tryJoin joins the nodes on addrs; the first failure leaves the others
// (they wait for it) and closes those that joined.
func tryJoin(n int, addrs []string, opts func(i int, addrs []string) Options) ([]*Node, error) {
	nodes := make([]*Node, n)
	errs := make(chan error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
	defer cancel()
	for i := range n {
		go func() {
			var err error
			nodes[i], err = Join(ctx, opts(i, addrs))
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	if first != nil {
		for _, nd := range nodes {
			if nd != nil {
				nd.Close()
			}
		}
	}
	return nodes, first
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

// A route port another program holds: Join says so at once (the embedded
// server cannot listen on it), not after its wait for the server.
func TestJoinSaysTheRoutePortIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nd, err := Join(ctx, Options{Name: "x", Listen: ln.Addr().String(), Peers: []string{"127.0.0.1:1"}, Dir: t.TempDir()})
	if err == nil {
		nd.Close()
		t.Fatal("joined on a route port another holds")
	}
	if !strings.Contains(err.Error(), "starting the embedded NATS server") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("joining on a route port another holds: %v; want it to say the address is in use", err)
	}
}
