package servercmd

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/api"
)

// serve's bounds reach the games, counted by the client's address as a
// loopback proxy (Caddy) names it: a second socket of one address is
// refused, another address's is not but for the game's instances, and the
// game's load line says its bound.
func TestServeBoundsReachTheGames(t *testing.T) {
	root := t.TempDir()
	arena := filepath.Join(root, api.GamesDir, "example.com", "arena")
	if err := os.CopyFS(arena, os.DirFS("../../examples/sites/example.com/arena")); err != nil {
		t.Fatal(err)
	}
	listen, _, logs := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir(),
		MaxInstances: 1, DefaultInstances: 1, RoomsPerMinute: 10, SocketsPerAddress: 1})
	if !regexp.MustCompile(`game=example\.com/arena version=\w+ tickRate=20 sendRate=10 capacity=16 maxInstances=1\n`).MatchString(logs.String()) { // startServe waits for the games to load
		t.Fatalf("the game's load line lacks its bound:\n%s", logs.String())
	}
	// dial opens a socket for the client at addr and returns the first
	// frame's type and, if the server closed it, the close code and reason.
	dial := func(addr, query string) (first string, closed *websocket.CloseError) {
		t.Helper()
		h := http.Header{"Host": {"example.com"}, "Origin": {"https://example.com"}, "X-Forwarded-For": {addr}}
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+listen+"/arena"+query, h)
		if err != nil {
			t.Fatalf("dialling as %s: %v", addr, err)
		}
		t.Cleanup(func() { ws.Close() })
		ws.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard
		var m struct{ T string }
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("reading as %s: %v", addr, err)
		}
		if m.T == "error" {
			_, _, err := ws.ReadMessage()
			closed, _ = err.(*websocket.CloseError)
		}
		return m.T, closed
	}
	if first, _ := dial("198.51.100.1", ""); first != "welcome" {
		t.Fatalf("the first socket got %q, want a welcome", first)
	}
	if _, ce := dial("198.51.100.1", ""); ce == nil || ce.Code != 1013 || !strings.Contains(ce.Text, "too many connections") {
		t.Fatalf("a second socket of one address: %v, want 1013 for too many connections", ce)
	}
	if first, _ := dial("198.51.100.2", ""); first != "welcome" {
		t.Fatalf("another address got %q, want a welcome", first)
	}
	if _, ce := dial("198.51.100.3", "?room=x"); ce == nil || ce.Code != 1013 || !strings.Contains(ce.Text, "instances as it may (1)") {
		t.Fatalf("a second instance: %v, want 1013 for the game's bound", ce)
	}
}
