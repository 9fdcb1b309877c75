package fleet

import (
	"strings"
	"sync"
	"testing"

	"github.com/hoster-dev/hoster/pkg/store"
)

// TestWriteDuringApplyConverges: a Sync API write (or delete) through node
// x arrives while x applies node a's manifest of the same game, after the
// apply read x's disk and before it wrote. The request must not change the
// disk under the apply (it waits on its hold), so that the apply does not
// write over it and its publish finds its own body: every node's disk ends
// at the published manifest, the request's change in it. (Before the hold,
// the apply wrote a's version over the request's, and the disk differed
// from the manifest, or the publish failed with "the file changed while it
// was published".)
func TestWriteDuringApplyConverges(t *testing.T) {
	const p = "a.com/g/p.txt"
	for _, tc := range []struct {
		name  string
		local func(st *store.Store) (store.Change, error)
		want  map[string]string
	}{
		{"write", func(st *store.Store) (store.Change, error) {
			w, err := st.Write(p, strings.NewReader("v2"), 0)
			return store.Change{Path: p, SHA256: w.SHA256}, err
		}, map[string]string{p: sha("v2")}},
		{"delete", func(st *store.Store) (store.Change, error) {
			return store.Change{Path: p}, st.Delete(p)
		}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			syncs := startSyncs(t, joinFleet(t, 2))
			a, x := syncs[0], syncs[1]
			reached, release := make(chan struct{}), make(chan struct{})
			waits, changed := make(chan struct{}), make(chan struct{})
			var applyOnce, waitOnce sync.Once
			// Set before x meets the game (its first write below): only
			// the apply of a's manifest reads the disk.
			x.sync.applyRead = func(string, string) {
				applyOnce.Do(func() { close(reached); <-release })
			}
			x.sync.holdWaits = func() { waitOnce.Do(func() { close(waits) }) }
			if err := x.write(p, "v0"); err != nil {
				t.Fatal(err)
			}
			a.waitTree(t, map[string]string{p: sha("v0")})
			if err := a.write(p, "v1"); err != nil {
				t.Fatal(err)
			}
			<-reached // x's apply of a's manifest has read its disk: p is v0
			done := make(chan error, 1)
			go func() {
				// The request as the Sync API makes it.
				held := x.sync.Hold("a.com", "g")
				defer held()
				c, err := tc.local(x.st)
				close(changed)
				if err == nil {
					err = x.sync.Publish([]store.Change{c})
				}
				done <- err
			}()
			select {
			case <-waits: // the request waits for the apply
			case <-changed: // it changed the disk under the apply
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for _, sn := range syncs {
				sn.waitTree(t, tc.want)
			}
		})
	}
}
