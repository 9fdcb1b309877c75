package servercmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/fleet"
)

// removeNode runs hoster-server remove-node with args, and returns its exit
// status and its output.
func removeNode(args ...string) (int, string) {
	var out bytes.Buffer
	code := Main(append([]string{"remove-node"}, args...), &out, &out)
	return code, out.String()
}

// TestRemoveNodeOfAnEmbeddedFleet: hoster-server remove-node, run beside a
// live node of a fleet of three, refuses to remove a running node, removes
// a stopped one from JetStream, and the two left go on syncing. (Before, an
// embedded fleet had no way to remove a node: peer-remove needs NATS's
// system account, which the embedded server opened to nobody.)
func TestRemoveNodeOfAnEmbeddedFleet(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // not the developer's hoster.json
	nodes := startFleet(t, 3, 1)
	a, b, c := nodes[0], nodes[1], nodes[2]

	if code, out := removeNode(c.Name, "--hosting-root", a.Root); code != 1 || !strings.Contains(out, "it is running") {
		t.Fatalf("removing the running %s: exit %d, want 1 and why:\n%s", c.Name, code, out)
	}
	if fi, err := os.Stat(filepath.Join(a.Root, FleetDir, fleet.SystemURLFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the system account's file of a running node: %v, want mode 600", err)
	}
	c.Stop()
	c.Wait(t)
	if _, err := os.Stat(filepath.Join(c.Root, FleetDir, fleet.SystemURLFile)); !os.IsNotExist(err) {
		t.Fatalf("a stopped node left its system account's file: %v", err)
	}
	if code, out := removeNode(c.Name, "--hosting-root", a.Root); code != 0 || !strings.Contains(out, "removed "+c.Name) {
		t.Fatalf("removing the stopped %s: exit %d\n%s", c.Name, code, out)
	}
	if strings.Contains(a.Out.String(), "JetStream being DISABLED") {
		t.Fatalf("%s turned its JetStream off:\n%s", a.Name, a.Out)
	}

	sites := arenaSites(t, 3)
	index := "<p>after the removal</p>"
	writeSite(t, filepath.Join(sites, "example.com", "arena"), "index.html", index)
	if code, out := hosterSync(t, a.url(), sites); code != 0 {
		t.Fatalf("sync through %s with %s removed: exit %d\n%s", a.Name, c.Name, code, out)
	}
	b.until(t, "the sync after the removal", func() bool { return b.page("") == index })

	for _, tc := range []struct {
		args []string
		code int
		why  string
	}{
		{[]string{c.Name, "--hosting-root", a.Root}, 1, "not a member of the cluster (no node of that --cluster-node name, or removed already)"},
		{[]string{c.Name, "--hosting-root", t.TempDir()}, 1, "no node of an embedded fleet runs"},
		{nil, 2, "accepts 1 arg"},
	} {
		if code, out := removeNode(tc.args...); code != tc.code || !strings.Contains(out, tc.why) {
			t.Errorf("remove-node %v: exit %d, want %d and %q:\n%s", tc.args, code, tc.code, tc.why, out)
		}
	}
}
