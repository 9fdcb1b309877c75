package servercmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
)

// TestServeAloneStartsNoNATS: without --cluster-* flags serve is the one
// server it always was: no fleet joined, no fleet data written.
func TestServeAloneStartsNoNATS(t *testing.T) {
	root := t.TempDir()
	_, _, logs := startServe(t, serveOptions{HostingRoot: root, Isolation: "none"})
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
	o := serveOptions{HostingRoot: root, Isolation: "none", Cluster: clusterOptions{Listen: "127.0.0.1:0", Node: "solo"}}
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
					t.Fatalf("sync through %s: exit %d\n%s", nodes[0].name, code, out)
				}
				want := nodes[0].diskTree(t)
				for _, nd := range nodes[1:] {
					nd.until(t, fmt.Sprintf("version %d", v.tickRate), func() bool {
						return nd.page("") == index && nd.tickRate() == v.tickRate && sameTree(nd.diskTree(t), want)
					})
				}
				for _, nd := range nodes {
					if tree := nd.apiTree(); !sameTree(tree, want) {
						t.Fatalf("%s's tree is not the fleet's: %d files, want %d", nd.name, len(tree), len(want))
					}
				}
			}
		})
	}
}
