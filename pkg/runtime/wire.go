package runtime

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// WebSocket opcodes (RFC 6455 5.2) of the frames the server writes.
const (
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
)

// outFrame is one message bound for a socket: its opcode and payload.
type outFrame struct {
	op   byte
	data []byte
}

// appendFrame appends f to b as a server frame: FIN and the opcode, the
// payload length in 7, 16 or 64 bits, unmasked, then the payload.
func appendFrame(b []byte, f outFrame) []byte {
	b = append(b, 0x80|f.op)
	switch n := len(f.data); {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xFFFF:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, f.data...)
}

// errWouldBlock says a non-blocking write could not take everything now.
var errWouldBlock = errors.New("the socket cannot take more without blocking")

// wire is a player's socket under its websocket.Conn. Every write goes
// through it, one at a time: the runtime's frames (written directly, see
// conn.writeOut) and the few gorilla/websocket writes itself (the close
// frame it sends when a player's frame is too large or breaks the
// protocol), so frames never interleave.
type wire struct {
	net.Conn
	raw rawWriter       // nil: no non-blocking writes, the writer goroutine writes all
	rd  syscall.RawConn // nil: gorilla's reader reads the socket (conn.readLoop)

	set atomic.Pointer[sockReader] // its reader in the process's read set; nil while not in it

	mu        sync.Mutex  // held for each write
	fd        int         // the read set's duplicate descriptor, written directly; -1: Conn is written
	setReader *sockReader // its reader in the set (inSet)
	fdClosed  bool        // setReader's descriptor is closed
	closeOwn  func() error
	upgraded  bool      // the handshake is written: what gorilla writes now is a close frame
	closeSent bool      // a close frame went out: nothing more may follow it
	deadline  time.Time // gorilla's deadline for its next write
}

// A Detacher is a socket whose own descriptor can be closed without
// ending it (a worker's handed socket, whose Close tells its parent the
// socket is done): the read set (readset_linux.go) keeps a duplicate of
// the descriptor, and the socket's Close is still called when the runtime
// is done with it. A *net.TCPConn or *net.UnixConn needs none: its Close
// is that.
type Detacher interface {
	CloseDescriptor() error
}

// rawWriter writes without blocking: one write(2) on the socket, how much
// it took, errWouldBlock when nothing (wire_unix.go).
type rawWriter interface {
	tryWrite(p []byte) (int, error)
}

func newWire(c net.Conn) *wire {
	return &wire{Conn: c, raw: rawOf(c), rd: readerOf(c), fd: -1}
}

// reader is the socket's descriptor to read frames from, nil for none.
func (w *wire) reader() syscall.RawConn {
	if w == nil {
		return nil
	}
	return w.rd
}

// inSet is the socket's reader for the process's read set (limit: the
// largest message), nil when it has no descriptor or there is no set; the
// caller starts it, then says whether it is in (joined).
func (w *wire) inSet(limit int64) *sockReader {
	if w == nil || w.rd == nil {
		return nil
	}
	fd, closeOwn, ok := detach(w.Conn)
	if !ok {
		return nil
	}
	r := newSockReader(fd, limit)
	if r == nil {
		closeFD(fd)
		return nil
	}
	w.mu.Lock()
	w.setReader, w.closeOwn = r, closeOwn
	w.mu.Unlock()
	w.set.Store(r)
	return r
}

// joined says whether r, from inSet, is in the set. In, the socket is
// written through the set's descriptor from now on, and Conn's own leaves
// Go's poller; out, the set's is closed and Conn is read as before. A
// socket closed in between (its reader ended at once) is left as Close
// left it.
func (w *wire) joined(r *sockReader, in bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.fdClosed:
	case !in:
		closeFD(int(r.fd))
		w.fdClosed = true
		w.set.Store(nil)
	default:
		w.fd = int(r.fd)
		w.closeOwn()
	}
}

// Close takes the socket out of the read set before its descriptor is
// closed (a descriptor's number is soon another socket's), then ends its
// reader as a reading goroutine ends when its socket is closed.
func (w *wire) Close() error {
	var ended func()
	if r := w.set.Swap(nil); r != nil {
		ended = r.closing()
	}
	w.mu.Lock()
	detached := w.fd >= 0
	if w.setReader != nil && !w.fdClosed {
		closeFD(int(w.setReader.fd))
		w.fdClosed = true
	}
	w.fd = -1
	w.mu.Unlock()
	err := w.Conn.Close() // its own descriptor is closed already when detached: it says it is done
	if ended != nil {
		ended()
	}
	if detached {
		return nil
	}
	return err
}

// SetWriteDeadline keeps gorilla's deadline for its own next write; the
// runtime's writes set theirs under mu.
func (w *wire) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	w.deadline = t
	w.mu.Unlock()
	return nil
}

// SetDeadline is the read deadline on the socket and the write deadline
// kept for gorilla's next write.
func (w *wire) SetDeadline(t time.Time) error {
	w.SetWriteDeadline(t)
	return w.Conn.SetReadDeadline(t)
}

// Write is gorilla's path: the handshake's response, then only its own
// close frames.
func (w *wire) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closeSent {
		return 0, net.ErrClosed
	}
	w.Conn.SetWriteDeadline(w.deadline)
	n, err := w.Conn.Write(p)
	w.Conn.SetWriteDeadline(time.Time{})
	if w.upgraded && len(p) > 0 && p[0]&0x0F == opClose {
		w.closeSent = true
	}
	return n, err
}

// markUpgraded says the handshake is over.
func (w *wire) markUpgraded() {
	w.mu.Lock()
	w.upgraded = true
	w.mu.Unlock()
}

// write writes p for the runtime. With wait false it never blocks: it writes
// what the socket takes now and returns errWouldBlock if that was not all
// (also when another write is under way). With wait true it waits up to
// timeout for the socket to take it all. After a close frame went out,
// whatever follows is dropped as written.
func (w *wire) write(p []byte, wait bool, timeout time.Duration) (int, error) {
	if !wait {
		if !w.mu.TryLock() {
			return 0, errWouldBlock
		}
	} else {
		w.mu.Lock()
	}
	defer w.mu.Unlock()
	if w.closeSent {
		return len(p), nil
	}
	if w.fd >= 0 {
		return w.writeFD(p, wait, timeout)
	}
	if !wait && w.raw == nil {
		return 0, errWouldBlock
	}
	if !wait {
		n, err := w.raw.tryWrite(p)
		if err == nil && n < len(p) {
			err = errWouldBlock
		}
		return n, err
	}
	w.Conn.SetWriteDeadline(time.Now().Add(timeout))
	n, err := w.Conn.Write(p)
	w.Conn.SetWriteDeadline(time.Time{})
	return n, err
}

// writeFD writes p on the set's descriptor: what the socket takes now,
// or with wait all of it, waiting up to timeout for the socket. w.mu is
// held.
func (w *wire) writeFD(p []byte, wait bool, timeout time.Duration) (int, error) {
	until := time.Now().Add(timeout)
	total := 0
	for {
		n, err := writeFD(w.fd, p[total:])
		total += n
		switch {
		case total == len(p):
			return total, nil
		case err != nil && err != errWouldBlock:
			return total, err
		case !wait:
			return total, errWouldBlock
		}
		if err := w.setReader.waitWritable(until); err != nil {
			return total, err
		}
	}
}

// hijackInto is w whose Hijack hands gorilla's upgrade the socket wrapped
// in a wire, kept in *into.
type hijackInto struct {
	http.ResponseWriter
	into **wire
}

func (h hijackInto) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	*h.into = newWire(c)
	return *h.into, brw, nil
}
