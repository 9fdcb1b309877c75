package runtime

import (
	"errors"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// setSocket is a server socket read by the process's read set, as
// readLoop puts it there: what it handed on, and why it ended.
type setSocket struct {
	w     *wire
	r     *sockReader
	mu    sync.Mutex
	got   []string
	ended chan error // each end, buffered: a second one would show
}

// inReadSet puts the server side of a loopback pair in the read set.
func inReadSet(t *testing.T) (*setSocket, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	ss := &setSocket{w: newWire(s), ended: make(chan error, 2)}
	ss.r = ss.w.inSet(1 << 15)
	if ss.r == nil {
		t.Fatal("the socket did not go in the read set")
	}
	in := ss.r.start(func(op int, data []byte) bool {
		ss.mu.Lock()
		ss.got = append(ss.got, string(data))
		ss.mu.Unlock()
		return true
	}, func([]byte) {}, func([]byte) {}, func(int, string) {}, func(err error) {
		ss.ended <- err
		ss.w.Close() // as the runtime's writer does once the close frame is out
	})
	ss.w.joined(ss.r, in)
	if !in {
		t.Fatal("the socket could not join the read set")
	}
	t.Cleanup(func() { client.Close(); ss.w.Close() })
	return ss, client
}

func (ss *setSocket) messages() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]string(nil), ss.got...)
}

// waitFor polls cond until it holds, failing after a long guard.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for guard := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(guard) {
			t.Fatalf("waiting for %s: it never came", what)
		}
		goruntime.Gosched()
	}
}

// openFDs is how many descriptors the process has open.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// One set reads many sockets, each one's messages in order, with no
// goroutine for any of them.
func TestReadSetServesManySockets(t *testing.T) {
	sockets() // the set's own goroutine, once per process
	const n, each = 40, 5
	before := goruntime.NumGoroutine()
	var all []*setSocket
	var clients []net.Conn
	for range n {
		ss, c := inReadSet(t)
		all, clients = append(all, ss), append(clients, c)
	}
	if grew := goruntime.NumGoroutine() - before; grew >= n/4 {
		t.Fatalf("%d more goroutines for %d sockets in the read set, want fewer than %d", grew, n, n/4)
	}
	for m := range each {
		for i, c := range clients {
			if _, err := c.Write(clientFrame(true, websocket.TextMessage, fmt.Appendf(nil, "s%d m%d", i, m), true)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, ss := range all {
		waitUntil(t, fmt.Sprintf("socket %d's messages", i), func() bool { return len(ss.messages()) == each })
		var want []string
		for m := range each {
			want = append(want, fmt.Sprintf("s%d m%d", i, m))
		}
		if got := ss.messages(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("socket %d handed on %q, want %q", i, got, want)
		}
	}
}

// A socket that ends inside a frame ends its reader once, with why, and
// leaves the set; its descriptors are all closed then (none leaks).
func TestReadSetSocketEndsMidFrame(t *testing.T) {
	sockets()
	fds := openFDs(t)
	ss, client := inReadSet(t)
	frame := clientFrame(true, websocket.TextMessage, []byte("hello"), true)
	if _, err := client.Write(frame[:4]); err != nil {
		t.Fatal(err)
	}
	client.Close()
	err := <-ss.ended
	if err == nil || !strings.Contains(err.Error(), "ended without a close frame") {
		t.Fatalf("the reader ended with %v, want the socket's end", err)
	}
	waitUntil(t, "the socket to leave the set", func() bool { return !inTheSet(ss.r) })
	if got := ss.messages(); len(got) != 0 {
		t.Fatalf("half a frame handed on %q", got)
	}
	ss.w.Close()
	select {
	case err := <-ss.ended:
		t.Fatalf("the reader ended twice, the second time with %v", err)
	default:
	}
	if now := openFDs(t); now != fds {
		t.Fatalf("%d descriptors open after the socket ended, %d before: one leaked", now, fds)
	}
}

// inTheSet reports whether r is still in its set.
func inTheSet(r *sockReader) bool {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	return r.set.byFD[r.fd] == r
}

// A socket closed by the runtime (its close frame written) leaves the set
// before its descriptor is closed, and its reader ends once, as a
// closed socket's reading goroutine did.
func TestReadSetSocketClosedEndsItsReaderOnce(t *testing.T) {
	sockets()
	ss, _ := inReadSet(t)
	ss.w.Close()
	if err := <-ss.ended; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the reader ended with %v, want net.ErrClosed", err)
	}
	if inTheSet(ss.r) {
		t.Fatal("a closed socket is still in the read set")
	}
	ss.w.Close()
	select {
	case err := <-ss.ended:
		t.Fatalf("the reader ended twice, the second time with %v", err)
	default:
	}
}

// A socket silent past its deadline (3 ping periods) is ended by the
// set's sweep; one that spoke in time is not.
func TestReadSetEndsASilentSocket(t *testing.T) {
	s := sockets()
	began := time.Now()
	silent, _ := inReadSet(t)
	alive, _ := inReadSet(t)
	if d := time.Unix(0, alive.r.deadline.Load()); d.Before(began.Add(3*pingEvery)) || d.After(time.Now().Add(3*pingEvery)) {
		t.Fatalf("a socket that joined the set is given until %v, want 3 ping periods from when it joined", d)
	}
	silent.r.deadline.Store(time.Now().Add(-time.Second).UnixNano())
	s.sweep()
	if err := <-silent.ended; !errors.Is(err, errSilent) {
		t.Fatalf("the silent socket ended with %v, want %v", err, errSilent)
	}
	if inTheSet(silent.r) || !inTheSet(alive.r) {
		t.Fatalf("after the sweep: the silent socket in the set %v, the live one %v; want false, true", inTheSet(silent.r), inTheSet(alive.r))
	}
}

// A write that must wait for a socket that does not read waits for the set
// to see it writable, and takes it all once the peer reads.
func TestReadSetWriteWaitsForTheSocket(t *testing.T) {
	sockets()
	ss, client := inReadSet(t)
	big := make([]byte, 8<<20) // more than the socket's buffers take at once
	n, err := ss.w.write(big, false, time.Minute)
	if err != errWouldBlock || n >= len(big) {
		t.Fatalf("a write without waiting took %d of %d bytes (%v), want part of it and errWouldBlock", n, len(big), err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ss.w.write(big[n:], true, time.Minute)
		done <- err
	}()
	buf := make([]byte, 64<<10)
	for read := 0; read < len(big); {
		m, err := client.Read(buf)
		if err != nil {
			t.Fatalf("reading what the server wrote: %v after %d bytes", err, read)
		}
		read += m
	}
	if err := <-done; err != nil {
		t.Fatalf("the waiting write ended with %v", err)
	}
}
