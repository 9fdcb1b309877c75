// Package socktest reads a game socket for tests: the names a player is
// seen with, as the runtime's updates carry them, so a test can wait for
// edited game code to answer on a socket that stayed open.
package socktest

import "github.com/gorilla/websocket"

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
