package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/store"
)

// storedMsgs is how many messages the object store's stream holds.
func storedMsgs(t *testing.T, sn *syncNode) uint64 {
	t.Helper()
	info, err := sn.sync.bodyStream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// TestBodyPutAgainLeavesNoChunks: a body the object store holds already,
// which a node does not know of (stored by a publish whose manifest was
// never written), is put again by that node in place of the first: the
// store holds one chunk and one description of it, not the first put's
// chunk beside the second's.
func TestBodyPutAgainLeavesNoChunks(t *testing.T) {
	syncs := startSyncs(t, joinFleet(t, 2))
	a, b := syncs[0], syncs[1]
	ctx := context.Background()
	const p = "a.com/g/p.txt"
	var changes []store.Change
	for _, sn := range syncs {
		w, err := sn.st.Write(p, strings.NewReader("body"), 0)
		if err != nil {
			t.Fatal(err)
		}
		changes = []store.Change{{Path: p, SHA256: w.SHA256}}
	}
	if err := a.sync.putBodies(ctx, changes); err != nil {
		t.Fatal(err)
	}
	if err := b.sync.Publish(changes); err != nil {
		t.Fatal(err)
	}
	if n := storedMsgs(t, b); n != 2 {
		t.Fatalf("the object store holds %d messages, want 2: one body's chunk and its description", n)
	}
	if err := b.sync.fetchBody(store.Change{Path: "a.com/g/q.txt", SHA256: sha("body")}); err != nil {
		t.Fatal(err)
	}
}

// TestChangedBodyIsNotStored: a file whose bytes are no longer the sha256
// its change names (written again since) fails the publish, and the object
// store keeps nothing of it.
func TestChangedBodyIsNotStored(t *testing.T) {
	a := startSyncs(t, joinFleet(t, 1))[0]
	const p = "a.com/g/p.txt"
	if _, err := a.st.Write(p, strings.NewReader("new"), 0); err != nil {
		t.Fatal(err)
	}
	err := a.sync.Publish([]store.Change{{Path: p, SHA256: sha("old")}})
	if !errors.Is(err, errBodyChanged) {
		t.Fatalf("the publish failed with %v, want %v", err, errBodyChanged)
	}
	if n := storedMsgs(t, a); n != 0 {
		t.Fatalf("the object store holds %d messages, want none", n)
	}
}
