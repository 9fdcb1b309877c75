package runtime

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Frames of every size class parse as a client reads them: the 7-bit,
// 16-bit and 64-bit lengths.
func TestAppendFrameSizes(t *testing.T) {
	for _, n := range []int{0, 125, 126, 65535, 65536, 200000} {
		payload := bytes.Repeat([]byte{'x'}, n)
		r := bytes.NewReader(appendFrame(nil, outFrame{opBinary, payload}))
		got, op := readFrame(t, r)
		if op != opBinary || !bytes.Equal(got, payload) || r.Len() != 0 {
			t.Fatalf("a %d-byte frame read back as %d bytes, opcode %d, %d left over", n, len(got), op, r.Len())
		}
	}
}

// readFrame reads one unmasked frame with FIN set, as RFC 6455 5.2 lays it out.
func readFrame(t *testing.T, r io.Reader) ([]byte, byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatal(err)
	}
	if h[0]&0x80 == 0 || h[1]&0x80 != 0 {
		t.Fatalf("header %x: want FIN and no mask", h)
	}
	n := int(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(r, b[:])
		n = int(b[0])<<8 | int(b[1])
	case 127:
		var b [8]byte
		io.ReadFull(r, b[:])
		n = 0
		for _, x := range b {
			n = n<<8 | int(x)
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		t.Fatal(err)
	}
	return p, h[0] & 0x0F
}

// hiddenSockets hands out accepted connections that do not show their
// socket (as a TLS connection would not): the writer goroutine writes all.
type hiddenSockets struct{ net.Listener }

func (l hiddenSockets) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return struct{ net.Conn }{c}, nil
}

// The runtime writes every frame itself, gorilla's answers included: pings
// sent by a player in the middle of its updates each get their pong, the
// stream stays whole (gorilla's client fails on a torn frame), and a close
// from the player is answered with its code. Both ways of writing: at once
// on the socket, and through the writer goroutine alone.
func TestPongsAndCloseGoWithTheUpdates(t *testing.T) {
	for _, hidden := range []bool{false, true} {
		t.Run(fmt.Sprintf("hidden=%v", hidden), func(t *testing.T) {
			e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
			ts := httptest.NewUnstartedServer(e.rt)
			if hidden {
				ts.Listener = hiddenSockets{ts.Listener}
			}
			ts.Start()
			t.Cleanup(ts.Close)
			ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/lab?name=ada", http.Header{"Host": {"a.example"}})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			pongs := make(chan string, 100)
			ws.SetPongHandler(func(data string) error { pongs <- data; return nil })
			read := make(chan error, 1)
			updates := make(chan struct{}, 1000)
			go func() {
				for {
					if _, m, err := ws.ReadMessage(); err != nil {
						read <- err
						return
					} else if bytes.Contains(m, []byte(`"t":"update"`)) {
						updates <- struct{}{}
					}
				}
			}()
			timeout := time.After(10 * time.Second)
			select {
			case <-updates:
			case <-timeout:
				t.Fatal("no update")
			}
			const n = 20
			for i := range n {
				if err := ws.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 1}}); err != nil {
					t.Fatal(err)
				}
				if err := ws.WriteControl(websocket.PingMessage, []byte(fmt.Sprint(i)), time.Now().Add(5*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				select {
				case p := <-pongs:
					if p != fmt.Sprint(i) {
						t.Fatalf("pong %d carried %q", i, p)
					}
				case err := <-read:
					t.Fatalf("the stream broke before pong %d: %v", i, err)
				case <-timeout:
					t.Fatalf("no pong %d", i)
				}
			}
			for len(updates) > 0 {
				<-updates
			}
			select { // the stream still carries updates after the pongs
			case <-updates:
			case err := <-read:
				t.Fatalf("the stream broke after the pongs: %v", err)
			case <-timeout:
				t.Fatal("no update after the pongs")
			}
			ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4100, "bye"), time.Now().Add(5*time.Second))
			select {
			case err := <-read:
				if !websocket.IsCloseError(err, 4100) {
					t.Fatalf("the close was answered with %v, want its code 4100", err)
				}
			case <-timeout:
				t.Fatal("the close was not answered")
			}
		})
	}
}
