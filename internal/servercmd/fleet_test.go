package servercmd

import (
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
