package fleet

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/clientip"
)

// The relay between nodes is a TCP connection per socket (TLS when the
// fleet has certificates): the relaying node dials the owner's relay,
// writes a preamble (relayMagic, the owner's secret, the client's address)
// and then the socket's HTTP request as it came, and from there copies
// bytes both ways. The owner admits the connection only with its secret
// and serves it as a connection of its own, from the client's address:
// the request reaches its runtime (and a game's worker) as a local socket.
// docs/architecture.md says why TCP and not NATS subjects.

// relayMagic opens a preamble.
const relayMagic = "hoster-relay/1"

// maxPreamble bounds a preamble.
const maxPreamble = 512

// preambleTimeout bounds the wait for a connection's preamble.
const preambleTimeout = 5 * time.Second

// errUnreachable: the owner's relay could not be dialled (nothing was sent
// to the client; the caller may try again).
var errUnreachable = errors.New("the room's node is unreachable")

// preamble is a relay connection's first bytes: its length (2 bytes, big
// endian) then relayMagic, the secret and the client's address, each
// ending in a newline.
func preamble(secret []byte, client string) []byte {
	body := relayMagic + "\n" + string(secret) + "\n" + client + "\n"
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(body))), body...)
}

// readPreamble reads exactly a preamble from c (nothing past it) and
// returns the client's address, or why the connection is refused.
func readPreamble(c net.Conn, secret []byte) (netip.AddrPort, error) {
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return netip.AddrPort{}, fmt.Errorf("reading the preamble: %w", err)
	}
	size := binary.BigEndian.Uint16(n[:])
	if size > maxPreamble {
		return netip.AddrPort{}, fmt.Errorf("a preamble of %d bytes", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		return netip.AddrPort{}, fmt.Errorf("reading the preamble: %w", err)
	}
	parts := strings.Split(string(body), "\n")
	if len(parts) != 4 || parts[0] != relayMagic || parts[3] != "" {
		return netip.AddrPort{}, errors.New("not a relay preamble")
	}
	if subtle.ConstantTimeCompare([]byte(parts[1]), secret) != 1 {
		return netip.AddrPort{}, errors.New("a wrong secret")
	}
	addr, err := netip.ParseAddr(parts[2])
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("reading the client's address: %w", err)
	}
	return netip.AddrPortFrom(addr, 0), nil
}

// relayListener is the owner's side: it accepts the relay connections,
// admits those whose preamble carries the secret and gives them to the
// relay's HTTP server, each as a connection from its client's address.
type relayListener struct {
	ln     net.Listener
	secret []byte
	log    *slog.Logger
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
}

func newRelayListener(ln net.Listener, secret []byte, log *slog.Logger) *relayListener {
	l := &relayListener{ln: ln, secret: secret, log: log, conns: make(chan net.Conn), done: make(chan struct{})}
	go l.run()
	return l
}

func (l *relayListener) run() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				l.log.Error("fleet: the rooms relay stopped accepting", "err", err)
			}
			l.Close()
			return
		}
		go l.admit(c)
	}
}

// admit reads c's preamble and, with the secret, hands c to Accept.
func (l *relayListener) admit(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(preambleTimeout))
	client, err := readPreamble(c, l.secret)
	if err != nil {
		l.log.Warn("fleet: a relay connection refused", "from", c.RemoteAddr().String(), "err", err)
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	var rc net.Conn = otherRelayed{c, addr(client.String())}
	if tc, ok := c.(*net.TCPConn); ok {
		// A plain socket stays one: a game's worker gets its descriptor.
		rc = tcpRelayed{tc, addr(client.String())}
	}
	select {
	case l.conns <- rc:
	case <-l.done:
		c.Close()
	}
}

func (l *relayListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *relayListener) Close() error {
	l.once.Do(func() { close(l.done); l.ln.Close() })
	return nil
}

func (l *relayListener) Addr() net.Addr { return l.ln.Addr() }

// addr is a client's address as a relayed connection tells it.
type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }

// tcpRelayed and otherRelayed are relayed connections, from their client's
// address. tcpRelayed keeps the socket's own methods (SyscallConn among
// them), as the runtime and a worker hand-off look for them.
type tcpRelayed struct {
	*net.TCPConn
	client net.Addr
}

func (c tcpRelayed) RemoteAddr() net.Addr { return c.client }

type otherRelayed struct {
	net.Conn
	client net.Addr
}

func (c otherRelayed) RemoteAddr() net.Addr { return c.client }

// dial opens a relay connection to the owner of c and writes its preamble.
func (rs *Rooms) dial(ctx context.Context, c claim, client netip.Addr) (net.Conn, error) {
	secret, err := secretOf(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var up net.Conn
	if rs.tls != nil {
		cfg := rs.tls.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(c.Relay)
		up, err = (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", c.Relay)
	} else {
		up, err = (&net.Dialer{}).DialContext(ctx, "tcp", c.Relay)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: dialling node %s at %s: %v", errUnreachable, c.Node, c.Relay, err)
	}
	if _, err := up.Write(preamble(secret, client.String())); err != nil {
		up.Close()
		return nil, fmt.Errorf("%w: writing to node %s: %v", errUnreachable, c.Node, err)
	}
	return up, nil
}

// carry relays the socket request r to the owner of c: the request as it
// came (without a proxy's X-Forwarded-For: the preamble names the client),
// then bytes both ways until either side ends. An owner that cannot be
// dialled is errUnreachable, with nothing sent to the client.
func (rs *Rooms) carry(w http.ResponseWriter, r *http.Request, c claim) error {
	up, err := rs.dial(r.Context(), c, clientip.Of(r))
	if err != nil {
		return err
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "this connection cannot be relayed", http.StatusInternalServerError)
		return nil
	}
	down, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return nil
	}
	down.SetDeadline(time.Time{})
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", r.Method, r.RequestURI, r.Host)
	h := r.Header.Clone()
	h.Del("X-Forwarded-For")
	h.Write(&head)
	head.WriteString("\r\n")
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		head.Write(b)
	}
	if _, err := up.Write(head.Bytes()); err != nil {
		up.Close()
		down.Close()
		return nil
	}
	pipe(down, up)
	return nil
}

// goingAway is the close frame a relayed player gets when the owner's
// connection ends without one (the node died): the usual going-away, upon
// which the browser library joins again.
var goingAway = closeFrame(1001, "the room's server went away")

func closeFrame(code int, reason string) []byte {
	f := []byte{0x88, byte(2 + len(reason))}
	f = binary.BigEndian.AppendUint16(f, uint16(code))
	return append(f, reason...)
}

// pipe copies down (the client) to up (the owner) and back until either
// ends, then closes both. What the owner sends is followed frame by frame,
// so that when it ends without a close frame between two frames, the
// client gets goingAway.
func pipe(down, up net.Conn) {
	go func() {
		io.Copy(up, down)
		up.Close()
	}()
	var t frameTracker
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			t.feed(buf[:n])
			if _, werr := down.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			if t.upgraded && !t.closed && t.atBoundary() {
				down.Write(goingAway)
			}
			break
		}
	}
	down.Close()
	up.Close()
}

// frameTracker follows a server's side of a WebSocket: its HTTP answer
// (upgraded: a 101), then each frame's header and payload, noting a close
// frame.
type frameTracker struct {
	head     []byte // the HTTP answer so far, until its end
	answered bool   // the answer's head is over
	upgraded bool
	closed   bool   // a close frame went by
	hdr      []byte // the frame header so far
	left     uint64 // the payload bytes of the current frame still to come
}

func (t *frameTracker) feed(b []byte) {
	if !t.answered {
		t.head = append(t.head, b...)
		i := bytes.Index(t.head, []byte("\r\n\r\n"))
		if i < 0 {
			if len(t.head) > 16<<10 {
				t.answered, t.head = true, nil // not an answer we follow
			}
			return
		}
		t.answered = true
		t.upgraded = bytes.HasPrefix(t.head, []byte("HTTP/1.1 101 "))
		b = t.head[i+4:]
		t.head = nil
	}
	for t.upgraded && len(b) > 0 {
		if t.left > 0 {
			k := min(uint64(len(b)), t.left)
			t.left -= k
			b = b[k:]
			continue
		}
		t.hdr = append(t.hdr, b[0])
		b = b[1:]
		if need := headerSize(t.hdr); need > 0 && len(t.hdr) == need {
			t.left = payloadSize(t.hdr)
			if t.hdr[0]&0x0f == 0x8 {
				t.closed = true
			}
			t.hdr = t.hdr[:0]
		}
	}
}

// atBoundary reports whether the stream stands between two frames.
func (t *frameTracker) atBoundary() bool { return len(t.hdr) == 0 && t.left == 0 }

// headerSize is the size of the frame header h begins, or 0 while h is
// too short to tell.
func headerSize(h []byte) int {
	if len(h) < 2 {
		return 0
	}
	n := 2
	switch h[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if h[1]&0x80 != 0 {
		n += 4
	}
	return n
}

// payloadSize is the payload length of the whole frame header h.
func payloadSize(h []byte) uint64 {
	switch l := h[1] & 0x7f; l {
	case 126:
		return uint64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		return binary.BigEndian.Uint64(h[2:10])
	default:
		return uint64(l)
	}
}
