package fleet

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// relayThrough starts an owner whose socket handler is serve, and a relay
// in front of it that pipes each connection to the owner (as carry does,
// without the preamble); it returns the relay's address.
func relayThrough(t *testing.T, serve func(*websocket.Conn)) string {
	t.Helper()
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		serve(ws)
	}))
	t.Cleanup(owner.Close)
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
			up, err := net.Dial("tcp", owner.Listener.Addr().String())
			if err != nil {
				down.Close()
				continue
			}
			go pipe(down, up)
		}
	}()
	return ln.Addr().String()
}

// closeOf reads ws until its end and returns the close code.
func closeOf(t *testing.T, ws *websocket.Conn) int {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			t.Fatalf("the socket ended without a close: %v", err)
		}
	}
}

// An owner whose connection ends between two frames (its node died) gives
// the relayed player the going-away close, whatever the frames' sizes; an
// owner's own close passes through unchanged.
func TestRelayGoesAwayWhenTheOwnerDies(t *testing.T) {
	for _, sizes := range [][]int{{}, {3}, {125, 126, 1000, 70000, 5}} {
		addr := relayThrough(t, func(ws *websocket.Conn) {
			for _, n := range sizes {
				ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", n)))
			}
			ws.NetConn().Close() // no close frame
		})
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if code := closeOf(t, ws); code != websocket.CloseGoingAway {
			t.Errorf("after frames of %v the player got %d, want 1001", sizes, code)
		}
		ws.Close()
	}
	addr := relayThrough(t, func(ws *websocket.Conn) {
		ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4003, "bye"))
		ws.NetConn().Close()
	})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if code := closeOf(t, ws); code != 4003 {
		t.Errorf("the owner's close came through as %d, want 4003", code)
	}
}
