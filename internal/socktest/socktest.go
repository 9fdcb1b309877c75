// Package socktest plays a game socket for tests: it reads the names a
// player is seen with, as the runtime's updates carry them, and moves the
// player until a name shows, so a test can wait for edited game code to
// answer on a socket that stayed open. No program links it.
package socktest

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Names reads conn's updates until the socket closes, and sends on the
// channel (closed then) each name the player with id is shown with, in an
// appear or a change.
func Names(conn *websocket.Conn, id string) <-chan string {
	names := make(chan string, 100)
	go func() {
		defer close(names)
		for {
			var m struct {
				Appear, Change []struct {
					ID string
					F  map[string]any
				}
			}
			if conn.ReadJSON(&m) != nil {
				return
			}
			for _, c := range append(m.Appear, m.Change...) {
				if name, ok := c.F["name"].(string); ok && c.ID == id {
					names <- name
				}
			}
		}
	}()
	return names
}

// MoveUntilNamed sends the player's standing move ({"c": "move"} with dx
// and dy 0) every interval until names shows want, and returns how long
// that took. It fails t if the socket closes first or want is not seen
// within 20 s (a hang guard).
func MoveUntilNamed(t testing.TB, conn *websocket.Conn, names <-chan string, want string, every time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-tick.C:
			conn.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 0, "dy": 0}})
		case name, ok := <-names:
			if !ok {
				t.Fatal("the socket closed before the player was named " + want)
			}
			if name == want {
				return time.Since(start)
			}
		case <-deadline:
			t.Fatalf("the player was never named %s", want)
		}
	}
}
