package fleet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/store"
	"github.com/nats-io/nats.go/jetstream"
)

// clock is a clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestUnnamedBodiesAreCollected: a body no manifest names any more is
// removed from the object store once the grace has passed since the
// collector first saw it so; a body stored by a publish not yet named (in
// flight) is kept, and so is every body a manifest names. A body removed
// and named again later is stored again (the publishing node trusts no
// longer that it is there).
func TestUnnamedBodiesAreCollected(t *testing.T) {
	const grace = time.Hour
	clk := &clock{t: time.Unix(1_000_000_000, 0)}
	syncs := startSyncs(t, joinFleet(t, 2), func(o *SyncOptions) { o.BodyGrace, o.Now = grace, clk.now })
	a, b := syncs[0], syncs[1]
	ctx := context.Background()
	const p, q = "a.com/g/p.txt", "a.com/g/q.txt"
	for _, v := range []string{"v1", "v2"} {
		if err := a.write(p, v); err != nil {
			t.Fatal(err)
		}
	}
	b.waitTree(t, map[string]string{p: sha("v2")})

	// A publish in flight: q's body is stored, its manifest not yet
	// written.
	w, err := a.st.Write(q, strings.NewReader("v3"), 0)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := []store.Change{{Path: q, SHA256: w.SHA256}}
	if err := a.sync.putBodies(ctx, inFlight); err != nil {
		t.Fatal(err)
	}
	if n, err := b.sync.collect(ctx); err != nil || n != 0 {
		t.Fatalf("the first collection removed %d bodies (%v), want none", n, err)
	}
	if err := a.sync.Publish(inFlight); err != nil {
		t.Fatal(err)
	}
	b.waitTree(t, map[string]string{p: sha("v2"), q: sha("v3")})

	clk.add(grace)
	if n, err := b.sync.collect(ctx); err != nil || n != 1 {
		t.Fatalf("the collection after the grace removed %d bodies (%v), want 1", n, err)
	}
	for body, kept := range map[string]bool{"v1": false, "v2": true, "v3": true} {
		_, err := b.sync.obj.GetInfo(ctx, sha(body))
		if gone := errors.Is(err, jetstream.ErrObjectNotFound); gone == kept || (err != nil && !gone) {
			t.Errorf("the body %s: kept %v, want %v (%v)", body, !gone, kept, err)
		}
	}

	if err := a.write(p, "v1"); err != nil {
		t.Fatal(err)
	}
	b.waitTree(t, map[string]string{p: sha("v1"), q: sha("v3")})
}
