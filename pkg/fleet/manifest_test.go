package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

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
// 6,000 of them is some 1.6 MB of JSON. The bodies are few, so that the
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

// TestStoredManifestIsNamedUntilReplaced: a manifest stored as a body (every
// one here: the test lowers the limit of an entry) is kept by the collector
// while the game's entry points at it, and removed once the grace passed
// after a newer manifest replaced it, as a file's old body is. A node that
// starts reads the stored manifest the entry points at.
func TestStoredManifestIsNamedUntilReplaced(t *testing.T) {
	const grace = time.Hour
	clk := &clock{t: time.Unix(1_000_000_000, 0)}
	nodes := joinFleet(t, 2)
	syncs := startSyncs(t, nodes, func(o *SyncOptions) { o.BodyGrace, o.Now = grace, clk.now })
	a, b := syncs[0], syncs[1]
	a.sync.inlineLimit = 1
	const p = "a.com/g/p.txt"
	ctx := context.Background()
	var stored []string
	for _, v := range []string{"v1", "v2"} {
		if err := a.write(p, v); err != nil {
			t.Fatal(err)
		}
		m, err := b.sync.latest(ctx, manifestKey("a.com", "g"))
		if err != nil || m.body == "" || m.Files[p] != sha(v) {
			t.Fatalf("the entry after %s: body %q, files %v (%v), want a stored manifest", v, m.body, m.Files, err)
		}
		stored = append(stored, m.body)
	}
	b.waitTree(t, map[string]string{p: sha("v2")})
	if n, err := b.sync.collect(ctx); err != nil || n != 0 {
		t.Fatalf("the first collection removed %d bodies (%v), want none", n, err)
	}
	clk.add(grace)
	if n, err := b.sync.collect(ctx); err != nil || n != 2 {
		t.Fatalf("the collection after the grace removed %d bodies (%v), want 2: v1 and the first manifest", n, err)
	}
	for h, kept := range map[string]bool{sha("v1"): false, stored[0]: false, sha("v2"): true, stored[1]: true} {
		_, err := b.sync.obj.GetInfo(ctx, h)
		if gone := errors.Is(err, jetstream.ErrObjectNotFound); gone == kept || (err != nil && !gone) {
			t.Errorf("the body %s: kept %v, want %v (%v)", h, !gone, kept, err)
		}
	}
	late := startSyncs(t, nodes[1:])[0]
	if tree, _ := late.sync.Tree(); len(tree) != 1 || tree[p] != sha("v2") {
		t.Fatalf("a sync started later reads the tree %v, want %s at v2", tree, p)
	}
	late.waitTree(t, map[string]string{p: sha("v2")})
}

// TestEntriesOfEitherForm: a manifest entry as every hoster-server wrote it
// before stored manifests (the manifest itself) is read as it was, so that a
// fleet upgrades node by node; an entry pointing at a stored manifest does
// not read as a manifest in the older form (an older node refuses it rather
// than take the game for one with no files); and an entry that is neither
// is refused as not a manifest.
func TestEntriesOfEitherForm(t *testing.T) {
	syncs := startSyncs(t, joinFleet(t, 1))
	s := syncs[0].sync
	ctx := context.Background()
	key := manifestKey("a.com", "g")
	old := `{"domain":"a.com","game":"g","files":{"a.com/g/p.txt":"` + sha("v1") + `"}}`
	if _, err := s.kv.Put(ctx, key, []byte(old)); err != nil {
		t.Fatal(err)
	}
	if m, err := s.latest(ctx, key); err != nil || m.body != "" || len(m.Files) != 1 || m.Files["a.com/g/p.txt"] != sha("v1") {
		t.Fatalf("reading the older entry: %+v, %v", m, err)
	}

	s.inlineLimit = 1
	m := manifest{Domain: "a.com", Game: "g", Files: map[string]string{"a.com/g/p.txt": sha("v2")}}
	b, err := s.encode(ctx, &m)
	if err != nil {
		t.Fatal(err)
	}
	var older struct {
		Domain, Game string
		Files        map[string]string
	}
	if err := json.Unmarshal(b, &older); err == nil {
		t.Fatalf("the pointing entry %s reads as an older manifest with files %v", b, older.Files)
	}
	got, err := s.decode(ctx, key, b)
	if err != nil || got.body != m.body || got.Files["a.com/g/p.txt"] != sha("v2") {
		t.Fatalf("decoding %s: %+v, %v", b, got, err)
	}

	for _, bad := range []string{
		`not json`,
		`{"domain":"b.com","game":"g","files":{}}`,
		`{"domain":"a.com","game":"g","files":"md5:00"}`,
		`{"domain":"a.com","game":"g","files":"sha256:` + sha("absent") + `","size":3}`,
	} {
		if _, err := s.decode(ctx, key, []byte(bad)); err == nil {
			t.Errorf("decoding %s succeeded", bad)
		} else if !errors.Is(err, errNotManifest) && !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("decoding %s: %v, which a retry would try again", bad, err)
		}
	}
}
