package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A game that keeps memory past its budget is ended in hoster dev as on a
// server: its player's socket closes with 4003, the terminal gives the
// server watchdog's line, and the playground lists the ended instance.
func TestDevEndsAGameOverItsMemory(t *testing.T) {
	root := t.TempDir()
	for rel, body := range map[string]string{
		"hoster-game.json":            `{"tickRate": 20, "sendRate": 10, "capacity": 4, "origins": ["*"], "memory": 64}`,
		"hoster-player/fields.json":   `{"n": "integer"}`,
		"hoster-player/join.js":       `export default function (i, p) { p.n = 0; }`,
		"hoster-instance/tick.js":     `export default function (i) { if (i.state.grow) i.state.grow.push("x".repeat(1 << 22) + Math.random()); }`,
		"hoster-commands/grow/run.js": `export default function (i) { i.state.grow = []; }`,
	} {
		p := filepath.Join(root, "hog.example", "grow", rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	port, _, log := startDev(t, root, "hog.example/grow")
	dialer := websocket.Dialer{NetDialContext: loopback(port)}
	ws, _, err := dialer.Dial(fmt.Sprintf("ws://hog.example.localhost:%d/grow", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteJSON(map[string]any{"c": "grow", "a": map[string]any{}})
	ws.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard
	for {
		_, _, err := ws.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) && ce.Code == 4003 && ce.Text == "the game ran out of its memory budget" {
			break
		}
		if err != nil {
			t.Fatalf("the player's socket ended with %v, want 4003 saying the game ran out of its memory budget", err)
		}
	}
	waitFor(t, "the watchdog's line", log, "hog.example/grow: error: game worker over its memory budget: ending it heap=")

	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, playgroundGames))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var games struct {
		Games []struct {
			Game   string
			Errors []struct{ Hook, Error string }
		}
	}
	json.NewDecoder(res.Body).Decode(&games)
	for _, g := range games.Games {
		for _, e := range g.Errors {
			if g.Game == "hog.example/grow" && e.Hook == "memory" && e.Error == "closed: the game ran out of its memory budget" {
				return
			}
		}
	}
	t.Fatalf("the playground does not show the game's end: %+v", games)
}
