package servercmd

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/api"
)

// Private rooms across a fleet of three serve processes (this test
// program, see TestMain), each with its embedded NATS on loopback and its
// games in worker processes, as hoster-server runs them.

// roomPlayer is a player of the arena's room, with what it saw: each
// other player appearing ("appear:<name>") and moving ("move:<name>"), and
// at its socket's end, its close ("close:<code>").
type roomPlayer struct {
	*testPlayer
	name string
	seen chan string
}

// closed waits for the player's socket to end and returns its close code
// (0: none).
func (p *roomPlayer) closed(t *testing.T) int {
	t.Helper()
	guard := time.After(30 * time.Second) // a hang guard
	for {
		select {
		case s, ok := <-p.seen:
			if !ok {
				return 0
			}
			if code, ok := strings.CutPrefix(s, "close:"); ok {
				n, _ := strconv.Atoi(code)
				return n
			}
		case <-guard:
			t.Fatalf("%s's socket never ended", p.name)
		}
	}
}

// joinRoom opens a socket of the arena's room on the node at listen, for a
// client of its own address, trying again while the node answers that the
// room's server does not (a 503 after its wait).
func joinRoom(t *testing.T, listen, name, addr, room string) *roomPlayer {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for {
		p, err := dialArena(t, listen, "example.com", addr, "?room="+room+"&name="+name)
		if err == nil {
			rp := &roomPlayer{testPlayer: p, name: name, seen: make(chan string, 1000)}
			go rp.read()
			return rp
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s could not join room %s at %s: %v", name, room, listen, err)
		}
	}
}

// read reads the player's updates until its socket ends.
func (p *roomPlayer) read() {
	defer close(p.seen)
	names := map[string]string{}
	for {
		var m struct {
			Appear, Change []struct {
				ID string
				F  map[string]any
			}
		}
		if err := p.ws.ReadJSON(&m); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				p.seen <- fmt.Sprintf("close:%d", ce.Code)
			}
			return
		}
		for _, a := range m.Appear {
			if name, ok := a.F["name"].(string); ok {
				names[a.ID] = name
				p.seen <- "appear:" + name
			}
		}
		for _, c := range m.Change {
			if _, moved := c.F["x"]; moved && names[c.ID] != "" {
				p.seen <- "move:" + names[c.ID]
			}
		}
	}
}

// sees waits until p saw want, while mover (if any) keeps moving.
func (p *roomPlayer) sees(t *testing.T, want string, mover *roomPlayer) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	guard := time.After(30 * time.Second) // a hang guard
	dx := 1
	for {
		select {
		case <-tick.C:
			if mover != nil {
				dx = -dx
				mover.ws.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": dx, "dy": 0}})
			}
		case s, ok := <-p.seen:
			if !ok {
				t.Fatalf("%s's socket ended before it saw %s", p.name, want)
			}
			if s == want {
				return
			}
		case <-guard:
			t.Fatalf("%s never saw %s", p.name, want)
		}
	}
}

// playTogether checks that a and b play in one instance: each sees the
// other and the other's moves.
func playTogether(t *testing.T, a, b *roomPlayer) {
	t.Helper()
	a.sees(t, "appear:"+b.name, nil)
	b.sees(t, "appear:"+a.name, nil)
	a.sees(t, "move:"+b.name, b)
	b.sees(t, "move:"+a.name, a)
}

// Two players who reach two nodes with the same ?room= play in one
// instance: the second node relays its player's socket to the room's
// owner. When the owner dies (SIGKILL), the relayed player gets the
// going-away close from its node, and both players, joining again on live
// nodes, are in one room once more, made on a live node after the dead
// one's claim expired.
func TestFleetPrivateRoomFromAnyNode(t *testing.T) {
	nodes := startRoomFleet(t, 3)
	alice := joinRoom(t, nodes[0].Listen, "alice", "198.51.100.1", "r1")
	bob := joinRoom(t, nodes[1].Listen, "bob", "198.51.100.2", "r1")
	playTogether(t, alice, bob)

	// alice's node made the room: it is the owner.
	died := time.Now()
	nodes[0].Kill(t)
	if code := bob.closed(t); code != 1001 {
		t.Errorf("the relayed player got %d when the room's node died, want 1001", code)
	}
	alice.closed(t)
	back := make(chan *roomPlayer, 2)
	go func() { back <- joinRoom(t, nodes[2].Listen, "alice", "198.51.100.1", "r1") }()
	go func() { back <- joinRoom(t, nodes[1].Listen, "bob", "198.51.100.2", "r1") }()
	a, b := <-back, <-back
	welcomed := time.Since(died)
	playTogether(t, a, b)
	t.Logf("after the owner died: both players welcomed again in %v, seeing each other move in %v",
		welcomed.Round(time.Millisecond), time.Since(died).Round(time.Millisecond))
}

// A relay connection without the node's secret is refused: closed before
// any request is read, and logged.
func TestFleetRelayRefusesAStranger(t *testing.T) {
	nd := startRoomFleet(t, 1)[0]
	req := "GET /arena?room=r1 HTTP/1.1\r\nHost: example.com\r\nOrigin: https://example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	body := "hoster-relay/1\n" + strings.Repeat("0", 64) + "\n198.51.100.9\n"
	for _, first := range []string{
		string(binary.BigEndian.AppendUint16(nil, uint16(len(body)))) + body, // a wrong secret
		req, // no preamble at all
	} {
		c, err := net.Dial("tcp", nd.Relay)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang guard
		c.Write([]byte(first + req))
		// Closed (a reset, with the request unread, or an end): no answer.
		if b, _ := io.ReadAll(c); len(b) > 0 {
			t.Errorf("a stranger's relay got %q; want it closed without an answer", b)
		}
		c.Close()
	}
	if !nd.Out.WaitFor(`msg="fleet: a relay connection refused"`, 2, 20*time.Second) {
		t.Fatalf("the refusals are not logged:\n%s", nd.Out)
	}
}

// A fleet node's game workers name the node in their telemetry lines.
func TestFleetTelemetryNamesTheNode(t *testing.T) {
	o := serveOptions{HostingRoot: exampleGames(t, "example.com"), LogsRoot: t.TempDir(),
		Cluster: clusterOptions{Listen: "127.0.0.1:0", Relay: "127.0.0.1:0", Node: "solo"}}
	listen, _, _, stop := startServeStoppable(t, o)
	if _, err := dialArena(t, listen, "example.com", "198.51.100.1", ""); err != nil {
		t.Fatal(err)
	}
	stop() // the workers write their instances' last lines first
	files, _ := filepath.Glob(filepath.Join(o.LogsRoot, api.GameLogsDir, "example.com", "arena", api.ProcessesDir, "*", "stats-*.jsonl"))
	var last api.GameStatsLine
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			json.Unmarshal([]byte(l), &last)
		}
	}
	if !last.Ended || last.Node != "solo" {
		t.Fatalf("the stats files %v end with %+v, want the instance's last line, naming node solo", files, last)
	}
}

// --cluster-relay and --cluster-advertise belong to a fleet: alone, they
// are a usage error.
func TestRelayFlagsNeedAFleet(t *testing.T) {
	for _, c := range []clusterOptions{{Relay: "127.0.0.1:6223"}, {Advertise: "10.0.0.1"}} {
		var ue usageError
		if err := c.validate(); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--cluster-relay, --cluster-advertise") {
			t.Errorf("%+v without a fleet: %v", c, err)
		}
	}
}
