package fleet

import (
	"bufio"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The measurement behind the relay's choice (docs/architecture.md): a
// socket's bytes carried from the node a player reached to the room's
// owner, directly over TCP (the relay hoster-server runs, pipe) or through
// the fleet's NATS, a subject per socket and direction (kept here only, as
// this bench). Both run in one process: two embedded NATS servers joined by
// a route, a relaying side and an owner that echoes each frame, and
// benchSockets clients, each sending a frame at a player's pace and
// waiting for its echo. The owner's end of a NATS socket goes through a
// socket pair, as it would to reach a game's worker (a TCP socket is handed
// to the worker as it is). The
// costs of the clients and the owner are the same for both: the difference
// is the relay's.
//
//	go test -run '^$' -bench BenchmarkRelay -benchtime 20000x ./pkg/fleet/

// benchSockets is how many sockets are relayed at once; each sends a
// frame every benchEvery (a player's commands at 50 a second), so the
// round trip measured is a frame's latency, not a saturated queue's.
const (
	benchSockets = 100
	benchEvery   = 20 * time.Millisecond
)

// benchFrame is a client's frame: a masked binary WebSocket frame of 64
// bytes of payload, as a player's command is.
var benchFrame = append([]byte{0x82, 0x80 | 64, 1, 2, 3, 4}, make([]byte, 64)...)

// echoOwner answers a relayed connection as an owner does: the 101, then
// every byte back.
func echoOwner(c io.ReadWriter) {
	c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"))
	io.Copy(c, c)
}

func BenchmarkRelay(b *testing.B) {
	b.Run("tcp", func(b *testing.B) { benchRelay(b, tcpRelay(b)) })
	b.Run("nats", func(b *testing.B) { benchRelay(b, natsRelay(b)) })
}

// tcpRelay is the relay hoster-server runs: each connection piped to the
// owner over a TCP connection of its own. It returns the relaying side's
// address.
func tcpRelay(b *testing.B) string {
	owner := listen(b, func(c net.Conn) { echoOwner(c); c.Close() })
	return listen(b, func(down net.Conn) {
		up, err := net.Dial("tcp", owner)
		if err != nil {
			down.Close()
			return
		}
		pipe(down, up)
	})
}

// natsRelay carries each connection through the fleet's NATS: the relaying
// node asks the owner to open a socket on its node's subject, then
// publishes what the client sends to the socket's up subject and writes
// what comes on its down subject to the client.
func natsRelay(b *testing.B) string {
	nodes := joinFleet(b, 2)
	owner, relay := nodes[0].Conn(), nodes[1].Conn()
	sub, err := owner.Subscribe("hoster.relay.open.n0", func(m *nats.Msg) {
		id := string(m.Data)
		c := &natsConn{nc: owner, out: "hoster.relay." + id + ".down", in: make(chan []byte, 256)}
		c.sub, _ = owner.Subscribe("hoster.relay."+id+".up", func(m *nats.Msg) { c.in <- m.Data })
		m.Respond(nil)
		// As in a game's worker: the owner's parent has no socket to
		// hand over, so it copies between NATS and a socket pair, as
		// pkg/worker does for any socket it cannot hand over.
		near, far := socketPair(b)
		go io.Copy(near, c)
		go io.Copy(c, near)
		go echoOwner(far)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sub.Unsubscribe() })
	return listen(b, func(down net.Conn) {
		id := nats.NewInbox()[len(nats.InboxPrefix):]
		s, err := relay.Subscribe("hoster.relay."+id+".down", func(m *nats.Msg) { down.Write(m.Data) })
		if err != nil {
			down.Close()
			return
		}
		defer s.Unsubscribe()
		// The owner's subscription reaches this node's server over the
		// route a moment after it is made.
		for deadline := time.Now().Add(5 * time.Second); ; {
			_, err := relay.Request("hoster.relay.open.n0", []byte(id), 5*time.Second)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				down.Close()
				return
			}
			<-time.After(10 * time.Millisecond)
		}
		buf := make([]byte, 32<<10)
		for {
			n, err := down.Read(buf)
			if err != nil {
				return
			}
			relay.Publish("hoster.relay."+id+".up", buf[:n])
		}
	})
}

// natsConn is the owner's end of a socket carried by NATS: what arrives on
// its up subject is read, what is written goes to its down subject.
type natsConn struct {
	nc   *nats.Conn
	sub  *nats.Subscription
	out  string
	in   chan []byte
	rest []byte
}

func (c *natsConn) Read(p []byte) (int, error) {
	if len(c.rest) == 0 {
		c.rest = <-c.in
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

func (c *natsConn) Write(p []byte) (int, error) { return len(p), c.nc.Publish(c.out, p) }

// socketPair is both ends of a new Unix socket pair.
func socketPair(b *testing.B) (net.Conn, net.Conn) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	var ends [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		if ends[i], err = net.FileConn(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return ends[0], ends[1]
}

// listen serves each connection to a new loopback listener with serve, and
// returns its address.
func listen(b *testing.B, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

// benchRelay runs b.N frames through the relay at addr, spread over
// benchSockets sockets, and reports the mean round trip of a frame and the
// process's CPU time per frame.
func benchRelay(b *testing.B, addr string) {
	conns := make([]*bufio.Reader, benchSockets)
	raw := make([]net.Conn, benchSockets)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		raw[i], conns[i] = c, bufio.NewReader(c)
		if _, err := conns[i].ReadString('\n'); err != nil { // the 101's first line
			b.Fatal(err)
		}
		for line := ""; line != "\r\n"; {
			line, _ = conns[i].ReadString('\n')
		}
	}
	per := max(b.N/benchSockets, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var rtt time.Duration
	cpu := cpuTime()
	b.ResetTimer()
	for i := range raw {
		wg.Add(1)
		go func() {
			defer wg.Done()
			echo := make([]byte, len(benchFrame))
			var sum time.Duration
			tick := time.NewTicker(benchEvery)
			defer tick.Stop()
			for range per {
				<-tick.C
				start := time.Now()
				raw[i].Write(benchFrame)
				if _, err := io.ReadFull(conns[i], echo); err != nil {
					b.Error(err)
					return
				}
				sum += time.Since(start)
			}
			mu.Lock()
			rtt += sum
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	frames := float64(per * benchSockets)
	b.ReportMetric(float64(rtt.Microseconds())/frames, "µs-rtt/frame")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/frames, "cpu-ns/frame")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
