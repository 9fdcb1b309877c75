// Package fleettest starts fleets of hoster-server serve processes for
// tests: the one home for starting, killing and starting again a node of a
// test fleet and reading its addresses. It imports nothing of the project
// but other test helpers, so any test may use it.
package fleettest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/httptestutil"
	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/worker"
)

// Node is one serve process of a test fleet, on a hosting root of its own.
// A test can kill -9 it and start it again on the same root and route
// port. Its --listen, --ask-listen and relay addresses are ports of its
// own choosing (":0"), read from its log at each start: a port picked free
// beforehand may be taken by the time a node that first joins its fleet
// binds it.
type Node struct {
	Name, Root, LogsRoot string
	Route                string          // its NATS route address, the same at each start: the others know it
	Peers                []string        // the others' route addresses
	Listen, Relay        string          // its --listen and rooms' relay addresses, of its current start
	Out                  *waitbuf.Buffer // the current start's output

	program string   // the hoster-server program
	flags   []string // serve's flags of its kind of test
	cmd     *exec.Cmd
	exited  chan struct{}
	logs    []*waitbuf.Buffer // the output of each start
}

// The lines a node's addresses are read from, whole (a line may be read
// while it is written).
var (
	ServingLine = regexp.MustCompile(`msg=serving listen=(\S+)\s`)
	relayLine   = regexp.MustCompile(`msg="fleet: rooms relay listening" addr=(\S+)\s`)
)

// errRouteTaken is a node's start that failed because its route port was
// taken between its pick and the node's bind.
var errRouteTaken = errors.New("its route port was taken meanwhile (address already in use)")

// Start starts n nodes of program (hoster-server, or a test program that
// is it) that form one fleet on loopback, named nodea, nodeb, ..., each on
// a hosting root root makes and with serve's flags, and waits until each
// serves its games. They are stopped at the test's end. The route ports
// are picked free, then bound by the nodes a moment later: one taken
// meanwhile (another connection's outgoing port) fails its node's start,
// and the fleet starts again on new roots and ports.
func Start(t *testing.T, n int, program string, root func() string, flags ...string) []*Node {
	t.Helper()
	for attempt := 1; ; attempt++ {
		routes := httptestutil.FreeAddrs(t, n)
		nodes := make([]*Node, n)
		for i := range nodes {
			nodes[i] = &Node{Name: fmt.Sprintf("node%c", 'a'+i), Root: root(), LogsRoot: t.TempDir(),
				Route: routes[i], program: program, flags: flags}
			for j, r := range routes {
				if j != i {
					nodes[i].Peers = append(nodes[i].Peers, r)
				}
			}
		}
		// All at once: the last node alone would wait for a quorum to leave.
		t.Cleanup(func() { stopAll(t, nodes) })
		for _, nd := range nodes {
			nd.Start(t)
		}
		err := servingAll(nodes)
		if err == nil {
			return nodes
		}
		if attempt == 3 || !errors.Is(err, errRouteTaken) {
			t.Fatal(err)
		}
		t.Logf("starting the fleet again on new route ports: %v", err)
		stopAll(t, nodes)
	}
}

// servingAll waits until every node serves; at the first that cannot, the
// others are stopped (they would wait for it) and its error returned.
func servingAll(nodes []*Node) error {
	errs := make(chan error, len(nodes))
	for _, nd := range nodes {
		go func() { errs <- nd.serving() }()
	}
	var first error
	for range nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
			for _, nd := range nodes {
				nd.Stop()
			}
		}
	}
	return first
}

// stopAll stops the nodes at once, then waits for each.
func stopAll(t *testing.T, nodes []*Node) {
	for _, nd := range nodes {
		nd.Stop()
	}
	for _, nd := range nodes {
		nd.Wait(t)
	}
}

// Start starts the node's process (again, after a kill); WaitServing
// waits until it serves.
func (nd *Node) Start(t *testing.T) {
	t.Helper()
	args := append([]string{"serve", "--hosting-root", nd.Root, "--logs-root", nd.LogsRoot,
		"--listen", "127.0.0.1:0", "--ask-listen", "127.0.0.1:0", "--stats-interval", "1h",
		"--cluster-listen", nd.Route, "--cluster-peers", strings.Join(nd.Peers, ","), "--cluster-node", nd.Name,
		// Not the route port plus one, which another test may hold.
		"--cluster-relay", "127.0.0.1:0"}, nd.flags...)
	cmd := exec.Command(nd.program, args...)
	out := waitbuf.New()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", nd.Name, err)
	}
	exited := make(chan struct{})
	name := nd.Name
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(out, "(the test: %s exited: %v)\n", name, err) // wakes a wait for its serving
		close(exited)
	}()
	nd.cmd, nd.Out, nd.exited = cmd, out, exited
	nd.logs = append(nd.logs, out)
}

// Stop stops the node's process as a signal does, at once; Wait waits for
// its end, and logs what each of its starts said if the test failed.
func (nd *Node) Stop() { nd.cmd.Process.Signal(os.Interrupt) }

func (nd *Node) Wait(t *testing.T) {
	select {
	case <-nd.exited:
	case <-time.After(15 * time.Second):
		nd.cmd.Process.Kill()
		<-nd.exited
	}
	if t.Failed() {
		for i, out := range nd.logs {
			t.Logf("%s (start %d) said:\n%s", nd.Name, i+1, out)
		}
		nd.logs = nil // said once
	}
}

// Kill kills the node's process with SIGKILL, as a crash does (its claims
// are left to expire, its sockets cut without a close frame), and waits
// for its end.
func (nd *Node) Kill(t *testing.T) {
	t.Helper()
	if err := nd.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-nd.exited
	// A node not started again leaves its workers' cgroups, which only a
	// start on its hosting root would sweep.
	t.Cleanup(func() {
		select {
		case <-nd.exited:
			worker.RemoveGroups(nd.Root)
		default:
		}
	})
}

// WaitServing waits until the node (started again) has joined the fleet
// and serves its games.
func (nd *Node) WaitServing(t *testing.T) {
	t.Helper()
	if err := nd.serving(); errors.Is(err, errRouteTaken) {
		t.Fatalf("%v\n(the fleet knows %s by that port: it cannot move to another)", err, nd.Name)
	} else if err != nil {
		t.Fatal(err)
	}
}

// serving waits until the node's current start serves its games, and reads
// its addresses from its log; or until it exits.
func (nd *Node) serving() error {
	ended := func() bool {
		select {
		case <-nd.exited:
			return true
		default:
			return false
		}
	}
	served := func(s string) bool { return strings.Contains(s, `msg="games loaded"`) && ServingLine.MatchString(s) }
	// A hang guard: a fleet of three forms in a few seconds.
	nd.Out.Until(func(s string) bool { return served(s) || ended() }, 60*time.Second)
	log := nd.Out.String()
	switch {
	case served(log):
		nd.Listen = ServingLine.FindStringSubmatch(log)[1]
		if m := relayLine.FindStringSubmatch(log); m != nil {
			nd.Relay = m[1]
		}
		return nil
	case ended() && strings.Contains(log, "address already in use"):
		return fmt.Errorf("%s did not start on route port %s: %w:\n%s", nd.Name, nd.Route, errRouteTaken, log)
	}
	return fmt.Errorf("%s never served its games:\n%s", nd.Name, log)
}
