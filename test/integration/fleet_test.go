package integration

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/fleettest"
)

// Two Chromium players of the example arena, each reaching its own node of
// a three-node fleet through a load balancer of its own, share a private
// room (?room=): the second node relays its player to the room's owner.
// When the owner is killed (SIGKILL), both pages' libraries join again,
// through their balancers, on live nodes, and play in one room again.
func TestFleetRoomInChromium(t *testing.T) {
	skipWithoutChromium(t)
	if testing.Short() {
		t.Skip("-short: skipping the fleet test")
	}
	bin := buildBinaries(t)
	nodes := startServeFleet(t, filepath.Join(bin, "hoster-server"), 3)
	// Player a's balancer prefers node 0, then 2; player b's node 1.
	a := balancer(t, nodes[0].Listen, nodes[2].Listen)
	b := balancer(t, nodes[1].Listen, nodes[2].Listen)

	chrome := startChromium(t, "about:blank", "--host-resolver-rules=MAP example.com 127.0.0.1")
	ta := chrome.attach(chrome.open(fmt.Sprintf("http://example.com:%s/arena/?room=r1", port(a))))
	welcomed(t, ta, 1)
	tb := chrome.attach(chrome.open(fmt.Sprintf("http://example.com:%s/arena/?room=r1", port(b))))
	welcomed(t, tb, 2)
	seeEachOtherMove(t, ta, tb)

	const rejoin = `void (window.rejoined = new Promise(resolve => game.on("welcome", m => resolve(m.player))))`
	for _, tab := range []*tab{ta, tb} {
		if err := tab.eval(rejoin, nil); err != nil {
			t.Fatal(err)
		}
	}
	died := time.Now()
	nodes[0].Kill(t) // the room's owner: player a reached it first
	for i, tab := range []*tab{ta, tb} {
		var me string
		if err := tab.await(`window.rejoined`, 30*time.Second, &me); err != nil {
			t.Fatalf("page %d never joined again after the owner died: %v", i+1, err)
		}
	}
	seeEachOtherMove(t, ta, tb)
	t.Logf("both pages played in one room again %v after the owner died", time.Since(died).Round(time.Millisecond))
}

// seeEachOtherMove waits until each page sees the other player move.
func seeEachOtherMove(t *testing.T, pages ...*tab) {
	t.Helper()
	for _, p := range pages {
		// Each page moves back and forth, and notes another player's move.
		if err := p.eval(`void (clearInterval(window.mover), window.mover = setInterval(() => {
			window.dx = -(window.dx || 1); if (game.connected) game.commands.move({dx: window.dx, dy: 0}); }, 100),
			window.sawOther = new Promise(resolve => game.on("change", (o, changed) => {
				if (o.id !== game.me && game.players[o.id] && "x" in changed) resolve(o.id); })))`, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range pages {
		var other string
		if err := p.await(`window.sawOther`, 30*time.Second, &other); err != nil {
			t.Fatalf("page %d never saw the other player move: %v", i+1, err)
		}
	}
}

// startServeFleet starts n hoster-server serve processes that form one
// fleet on loopback, each with the example arena (open to any origin) in
// a hosting root of its own, and waits until each serves its games.
func startServeFleet(t *testing.T, server string, n int) []*fleettest.Node {
	t.Helper()
	return fleettest.Start(t, n, server, func() string {
		root := t.TempDir()
		arena := filepath.Join(root, "hoster-games", "example.com", "arena")
		if err := os.CopyFS(arena, os.DirFS(filepath.Join(repoRoot(t), "examples", "sites", "example.com", "arena"))); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(arena, "hoster-game.json")
		b, _ := os.ReadFile(cfg)
		os.WriteFile(cfg, []byte(strings.Replace(string(b), `"https://example.com"`, `"*"`, 1)), 0o644)
		return root
	})
}

// balancer is a TCP load balancer as a player meets one: each connection
// goes to the first of backends that answers. It returns its address.
func balancer(t *testing.T, backends ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer down.Close()
				for _, addr := range backends {
					up, err := net.Dial("tcp", addr)
					if err != nil {
						continue
					}
					defer up.Close()
					go func() { io.Copy(up, down); up.Close() }()
					io.Copy(down, up)
					return
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// port is addr's port.
func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}
