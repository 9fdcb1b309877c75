package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hoster-dev/hoster/pkg/store"
)

// syncNode is a node of the fleet with its own games mirror and sync.
type syncNode struct {
	st      *store.Store
	sync    *Sync
	reloads chan string
}

// startSyncs starts a sync on each of nodes, with the options opts set.
func startSyncs(t *testing.T, nodes []*Node, opts ...func(*SyncOptions)) []*syncNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*syncNode
	for _, n := range nodes {
		st, err := store.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		sn := &syncNode{st: st, reloads: make(chan string, 1000)}
		o := SyncOptions{Store: st, ReloadDebounce: time.Millisecond,
			Reload: func(domain, game string) { sn.reloads <- domain + "/" + game }}
		for _, set := range opts {
			set(&o)
		}
		sn.sync, err = StartSync(ctx, n, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sn.sync.Close(); st.Close() })
		out = append(out, sn)
	}
	return out
}

// write writes a file as the Sync API does (holding its game) and
// publishes it.
func (sn *syncNode) write(rel, body string) error {
	domain, game, _ := store.GameOf(rel)
	defer sn.sync.Hold(domain, game)()
	w, err := sn.st.Write(rel, strings.NewReader(body), 0)
	if err != nil {
		return err
	}
	return sn.sync.Publish([]store.Change{{Path: rel, SHA256: w.SHA256}})
}

// waitTree waits, at each reload of the node, until its disk holds want.
func (sn *syncNode) waitTree(t *testing.T, want map[string]string) {
	t.Helper()
	guard := time.After(30 * time.Second) // a hang guard
	for {
		got, err := sn.st.Tree()
		if err == nil && len(got) == len(want) && fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		select {
		case <-sn.reloads:
		case <-guard:
			t.Fatalf("the disk holds %d files, want %d: %v", len(got), len(want), got)
		}
	}
}

// TestConcurrentSyncsLoseNothing: two nodes publishing the same game at
// once lose compare-and-sets to each other; each re-reads and merges, so
// the manifest ends with every file of both, and every node's disk with it.
func TestConcurrentSyncsLoseNothing(t *testing.T) {
	syncs := startSyncs(t, joinFleet(t, 3))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i, sn := range syncs[:2] {
		for j := range 20 {
			wg.Go(func() { errs <- sn.write(fmt.Sprintf("a.com/g/n%d/f%d.txt", i, j), fmt.Sprint(i, j)) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	m, err := syncs[2].sync.latest(context.Background(), manifestKey("a.com", "g"))
	if err != nil || len(m.Files) != 40 {
		t.Fatalf("the published manifest has %d files, want 40 (%v)", len(m.Files), err)
	}
	want := m.Files
	for _, sn := range syncs {
		sn.waitTree(t, want)
	}
}

// TestBodiesSharedByHash: a body already in the object store is not stored
// again, whichever game and node publish it; a deleted game leaves every
// node.
func TestBodiesSharedByHash(t *testing.T) {
	syncs := startSyncs(t, joinFleet(t, 3))
	if err := syncs[0].write("a.com/g/x.txt", "same"); err != nil {
		t.Fatal(err)
	}
	for _, sn := range syncs[1:] {
		sn.waitTree(t, map[string]string{"a.com/g/x.txt": sha("same")})
	}
	if err := syncs[1].write("b.com/h/y.txt", "same"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, err := syncs[2].sync.bodyStream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Msgs; n != 2 {
		t.Fatalf("the object store holds %d messages, want 2: one body's chunk and its description", n)
	}
	if err := syncs[2].st.Delete("a.com/g"); err != nil {
		t.Fatal(err)
	}
	if err := syncs[2].sync.Publish([]store.Change{{Path: "a.com/g"}}); err != nil {
		t.Fatal(err)
	}
	for _, sn := range syncs {
		sn.waitTree(t, map[string]string{"b.com/h/y.txt": sha("same")})
	}
}

// TestForgedBodyIsNeverWritten: a body in the object store under a name
// (a sha256) its bytes are not, one chunk or several, is fetched but never
// renamed into place, and the fetch says why.
func TestForgedBodyIsNeverWritten(t *testing.T) {
	sn := startSyncs(t, joinFleet(t, 1))[0]
	ctx := context.Background()
	for _, chunk := range []uint32{0, 4} {
		name := fmt.Sprintf("real body %d", chunk)
		meta := jetstream.ObjectMeta{Name: sha(name), Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunk}}
		info, err := sn.sync.obj.Put(ctx, meta, strings.NewReader("a forged body"))
		if err != nil {
			t.Fatal(err)
		}
		if chunk > 0 && info.Chunks < 2 {
			t.Fatalf("the forged body has %d chunks, want several", info.Chunks)
		}
		rel := fmt.Sprintf("a.com/g/f%d.txt", chunk)
		err = sn.sync.fetchBody(store.Change{Path: rel, SHA256: sha(name)})
		if !errors.Is(err, store.ErrNotWanted) {
			t.Fatalf("fetching a forged body of %d chunks: %v, want store.ErrNotWanted", info.Chunks, err)
		}
		if tree, _ := sn.st.Tree(); len(tree) != 0 {
			t.Fatalf("a forged body was written: %v", tree)
		}
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
