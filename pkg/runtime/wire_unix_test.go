//go:build unix

package runtime

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// BenchmarkSendRoundWrites is the socket side of a send round: a 1.4 KB
// update to each of 20 viewers on loopback, the round done when every
// viewer has read it. "inline" is the runtime's way (the round's goroutine
// writes each update at once); "writer" hides the sockets so that each
// update wakes its connection's writer goroutine (the way before). cpu-ns/op
// is the process's CPU time (server and readers) per round.
func BenchmarkSendRoundWrites(b *testing.B) {
	for _, mode := range []string{"inline", "writer"} {
		b.Run(mode, func(b *testing.B) {
			rt := &Runtime{o: Options{WriteTimeout: 10 * time.Second}}
			conns := make(chan *conn, 20)
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var sock *wire
				ws, err := upgrader.Upgrade(hijackInto{w, &sock}, r, nil)
				if err != nil {
					return
				}
				sock.markUpgraded()
				c := &conn{ws: ws, sock: sock, rt: rt, wake: make(chan struct{}, 1), gone: make(chan struct{})}
				go c.writeLoop()
				conns <- c
			}))
			if mode == "writer" {
				ts.Listener = hiddenSockets{ts.Listener}
			}
			ts.Start()
			defer ts.Close()
			const viewers = 20
			got := make(chan struct{}, viewers)
			var cs []*conn
			for range viewers {
				ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer ws.Close()
				go func() {
					for {
						if _, _, err := ws.ReadMessage(); err != nil {
							return
						}
						got <- struct{}{}
					}
				}()
				cs = append(cs, <-conns)
			}
			update := bytes.Repeat([]byte("x"), 1400)
			start := cpuTime()
			b.ResetTimer()
			for range b.N {
				for _, c := range cs {
					c.add(outFrame{opText, update}, true)
				}
				for _, c := range cs {
					c.flush()
				}
				for range viewers {
					<-got
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			for _, c := range cs {
				c.closeWith(1001, "")
			}
		})
	}
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
