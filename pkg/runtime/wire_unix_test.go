//go:build unix

package runtime

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
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

// countingSockets hands out accepted connections that count the writes made
// on them: each write(2) the runtime makes on the descriptor itself
// (through SyscallConn), or, hidden, each Write (the writer goroutine's, as
// for a TLS connection).
type countingSockets struct {
	net.Listener
	hidden bool
	writes *atomic.Int64
}

func (l countingSockets) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.hidden {
		return &countingConn{Conn: c, writes: l.writes}, nil
	}
	return &countingRawConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// countingRawConn shows its socket, whose raw writes are counted; Write
// (gorilla's handshake) too.
type countingRawConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingRawConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

func (c *countingRawConn) SyscallConn() (syscall.RawConn, error) {
	rc, err := c.Conn.(syscall.Conn).SyscallConn()
	return countingRaw{rc, c.writes}, err
}

type countingRaw struct {
	syscall.RawConn
	writes *atomic.Int64
}

func (r countingRaw) Write(f func(fd uintptr) bool) error {
	return r.RawConn.Write(func(fd uintptr) bool {
		r.writes.Add(1)
		return f(fd)
	})
}

// A send round writes a socket's due frames together: the update (the
// player moved), then the messages the tick's hooks sent the player and
// broadcast, in one write,
// on the socket at once and through the writer goroutine alike.
func TestARoundsFramesGoInOneWrite(t *testing.T) {
	for _, hidden := range []bool{false, true} {
		t.Run(fmt.Sprintf("hidden=%v", hidden), func(t *testing.T) {
			files := lab(4)
			files["hoster-commands/chat/args.json"] = `{}`
			files["hoster-commands/chat/run.js"] = `export default function (i, p) { p.x += 1; i.send(p, "hello", 1); i.broadcast("news", 2); }`
			clk := newStepClock()
			var sends atomic.Int64
			e := startWith(t, map[string]map[string]string{"a.example/lab": files}, func(o *Options) {
				o.clock = clk
				o.Observe = func(kind string, _ time.Duration) {
					if kind == "send" {
						sends.Add(1)
					}
				}
			})
			var writes atomic.Int64
			ts := httptest.NewUnstartedServer(e.rt)
			ts.Listener = countingSockets{ts.Listener, hidden, &writes}
			ts.Start()
			t.Cleanup(ts.Close)
			step := time.Second / 50
			c, _, err := (&env{rt: e.rt, url: ts.URL}).dial(t, "a.example", "/lab?name=ada", nil)
			if err != nil {
				t.Fatal(err)
			}
			// The join is queued once its socket is placed, which may come
			// after the dial returns and after the instance's first timer.
			waitJoinQueued(t, e.rt.lookup("a.example", "lab"))
			clk.waitArmed(t)
			clk.Advance(step) // the join, and the first send round
			me := c.next("welcome")["player"].(string)
			c.next("update")
			in := e.rt.lookup("a.example", "lab").snapshot()[0]
			w0, s0 := writes.Load(), sends.Load()
			in.enqueue(event{kind: "cmd", player: me, name: "chat"})
			for sends.Load() == s0 { // the tick that runs chat, up to its send round
				clk.waitArmed(t)
				clk.Advance(step)
			}
			var order []string
			for len(order) < 3 {
				m := c.nextAny()
				if m == nil {
					t.Fatal("the socket closed")
				}
				order = append(order, fmt.Sprint(m["t"], " ", m["type"]))
			}
			if want := []string{"update <nil>", "message hello", "message news"}; !slices.Equal(order, want) {
				t.Fatalf("frames %q, want %q", order, want)
			}
			if got := writes.Load() - w0; got != 1 {
				t.Fatalf("a round of an update and two messages took %d writes, want 1", got)
			}
		})
	}
}
