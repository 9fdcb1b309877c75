package dev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/waitbuf"
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
	var out, log waitbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("TMPDIR", t.TempDir())
	go func() { done <- Run(ctx, Options{Root: root, Port: 0, Out: &out, Log: &log}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if t.Failed() {
			t.Logf("terminal:\n%s%s", out.String(), log.String())
		}
	}()
	var port int
	if !out.Until(func(s string) bool {
		_, u, ok := strings.Cut(s, "hog.example/grow  ")
		n, _ := fmt.Sscanf(u, "http://hog.example.localhost:%d/grow/\n", &port)
		return ok && n == 1
	}, 20*time.Second) {
		t.Fatal("waiting for the game's URL")
	}
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
	waitFor(t, "the watchdog's line", &log, "hog.example/grow: error: game worker over its memory budget: ending it heap=")

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
