package servercmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

// TestServeAloneStartsNoNATS: without --cluster-* flags serve is the one
// server it always was: no fleet joined, no fleet data written.
func TestServeAloneStartsNoNATS(t *testing.T) {
	root := t.TempDir()
	_, _, logs := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir(), Isolation: "none"})
	if strings.Contains(logs.String(), "fleet") {
		t.Fatalf("a lone server spoke of a fleet:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(root, FleetDir)); !os.IsNotExist(err) {
		t.Fatalf("a lone server made %s: %v", FleetDir, err)
	}
}

// TestServeJoinsAOneNodeFleet: --cluster-listen starts the embedded NATS,
// whose data goes under the hosting root, beside the games root.
func TestServeJoinsAOneNodeFleet(t *testing.T) {
	root := t.TempDir()
	o := serveOptions{HostingRoot: root, LogsRoot: t.TempDir(), Isolation: "none", Cluster: clusterOptions{Listen: "127.0.0.1:0", Node: "solo"}}
	_, _, logs := startServe(t, o)
	if !strings.Contains(logs.String(), `msg="joined the fleet" node=solo`) {
		t.Fatalf("serve did not join the fleet:\n%s", logs)
	}
	if _, err := os.Stat(filepath.Join(root, FleetDir, "jetstream")); err != nil {
		t.Fatalf("the fleet's data is not under the hosting root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, api.GamesDir, FleetDir)); !os.IsNotExist(err) {
		t.Fatalf("fleet data in the games root: %v", err)
	}
}

// TestFleetSyncReachesEveryNode: a sync through node A is served by B and
// C, pages and game code, and every node answers the same tree; a second
// sync's new version too. In both variants of the contract.
func TestFleetSyncReachesEveryNode(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // not the developer's hoster.json
	for _, variant := range []int{1, 2} {
		t.Run(fmt.Sprintf("variant%d", variant), func(t *testing.T) {
			nodes := startFleet(t, 3, variant)
			sites := arenaSites(t, 3)
			arena := filepath.Join(sites, "example.com", "arena")
			for _, v := range []struct{ tickRate int }{{20}, {30}} {
				index := fmt.Sprintf("<p>version %d</p>", v.tickRate)
				writeSite(t, arena, "index.html", index)
				writeSite(t, arena, "hoster-game.json", fmt.Sprintf(`{"tickRate": %d, "sendRate": 10, "capacity": 16, "origins": ["https://example.com"]}`, v.tickRate))
				if code, out := hosterSync(t, nodes[0].url(), sites); code != 0 {
					t.Fatalf("sync through %s: exit %d\n%s", nodes[0].Name, code, out)
				}
				want := nodes[0].diskTree(t)
				for _, nd := range nodes[1:] {
					nd.until(t, fmt.Sprintf("version %d", v.tickRate), func() bool {
						return nd.page("") == index && nd.tickRate() == v.tickRate && sameTree(nd.diskTree(t), want)
					})
				}
				for _, nd := range nodes {
					if tree := nd.apiTree(); !sameTree(tree, want) {
						t.Fatalf("%s's tree is not the fleet's: %d files, want %d", nd.Name, len(tree), len(want))
					}
				}
			}
		})
	}
}

// TestFleetOutlivesItsNodes: a node killed (-9) in the middle of a sync
// through another leaves the sync to complete, and, started again, catches
// up byte-exact without a new sync; the node the client talks to killed
// in the middle, the client fails cleanly (exit 1), and a rerun through
// another node completes.
//
// It takes tens of seconds: a dead node that led a JetStream group leaves
// the others to elect a new leader, which NATS starts after 4 to 9 s.
func TestFleetOutlivesItsNodes(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // not the developer's hoster.json
	nodes := startFleet(t, 3, 1)
	a, b, c := nodes[0], nodes[1], nodes[2]
	sites := arenaSites(t, 300)

	// B dies while a sync goes through A.
	g := newGate(t, a)
	done := syncing(t, g.URL, sites)
	g.waitFirst(t)
	if !b.Out.WaitFor(`msg="fleet: wrote a game's published files"`, 1, 60*time.Second) {
		t.Fatalf("B never wrote the first batch:\n%s", b.Out)
	}
	b.Kill(t)
	g.release()
	if res := <-done; res[0] != "0" {
		t.Fatalf("the sync through A with B dead: exit %s\n%s", res[0], res[1])
	}
	want := a.diskTree(t)
	c.until(t, "the sync", func() bool { return sameTree(c.diskTree(t), want) })
	if !sameTree(a.apiTree(), want) || !sameTree(c.apiTree(), want) {
		t.Fatal("A or C answers another tree than the synced one")
	}
	b.Start(t)
	b.WaitServing(t)
	b.until(t, "what it missed", func() bool { return sameTree(b.diskTree(t), want) })

	// A, the node the client talks to, dies in the middle of a sync.
	arena := filepath.Join(sites, "example.com", "arena")
	for i := range 300 {
		writeSite(t, arena, fmt.Sprintf("assets/g%03d.txt", i), strings.Repeat(fmt.Sprintf("second %d ", i), 400))
	}
	g = newGate(t, a)
	done = syncing(t, g.URL, sites)
	g.waitFirst(t)
	a.Kill(t)
	g.release()
	if res := <-done; res[0] != "1" {
		t.Fatalf("the sync through a node that died: exit %s, want 1\n%s", res[0], res[1])
	}
	if code, out := hosterSync(t, c.url(), sites); code != 0 {
		t.Fatalf("the sync again through C: exit %d\n%s", code, out)
	}
	want = c.apiTree()
	if len(want) < 600 {
		t.Fatalf("C's tree has %d files after the rerun", len(want))
	}
	c.until(t, "the rerun's sync", func() bool { return sameTree(c.diskTree(t), want) })
	b.until(t, "the rerun's sync", func() bool { return sameTree(b.diskTree(t), want) })
}
