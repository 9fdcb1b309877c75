// Package worker runs each game in a worker process of its own: the same
// binary, started by hoster-server serve, holding one game's instances. The
// parent keeps HTTP, the APIs, the pages and the logs; it hands each
// accepted game socket to its game's worker over a Unix socket (the
// descriptor itself, SCM_RIGHTS: the worker owns the connection and no frame
// passes through the parent), bounds the worker's memory and CPU, and tells
// the players of a worker that ended why (4003 out of memory, 4004 ended).
//
// The control socket between the two is a SOCK_SEQPACKET pair: one JSON
// message a packet, a handed socket's descriptor riding on its packet.
package worker

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/hoster-dev/hoster/pkg/runtime"
	"golang.org/x/sys/unix"
)

// maxMessage is the largest control message: a game socket's query is the
// longest part. A socket whose query does not fit is closed by the parent
// with 1009.
const maxMessage = 64 << 10

// The messages' kinds. Parent to worker: msgConn (a WebSocket the parent
// upgraded, its descriptor attached, and what serving it needs, Sock; OK:
// a new room was taken for it, see runtime.Adopt),
// msgVersion (the game's version to run: a memfd holding its
// runtime.Source as JSON attached), msgRemove (the game was removed),
// msgRetire (no more sockets will come: end once idle), msgShutdown.
// Worker to parent: msgHello (its telemetry process id), msgClosed (a
// handed socket is done with), msgSettled (whether a handed socket spent the room taken for it,
// OK; one not spent goes back to its address), msgIdle (no instance for
// the idle time), msgStuck (a hook ignored its interrupt: the worker
// ends). Both ways: msgRoom, the worker asking
// whether an address may start a new instance (ID, Addr) and the parent's
// answer (ID, OK).
const (
	msgConn     = "conn"
	msgVersion  = "version"
	msgRemove   = "remove"
	msgRoom     = "room"
	msgRetire   = "retire"
	msgShutdown = "shutdown"
	msgHello    = "hello"
	msgClosed   = "closed"
	msgSettled  = "settled"
	msgIdle     = "idle"
	msgStuck    = "stuck"
)

// message is one control message.
type message struct {
	T       string           `json:"t"`
	ID      uint64           `json:"id,omitempty"`
	Sock    *runtime.Adopted `json:"sock,omitempty"` // msgConn's socket
	Process string           `json:"process,omitempty"`
	Reason  string           `json:"reason,omitempty"`
	Addr    string           `json:"addr,omitempty"` // msgRoom's address, as the bounds count it
	OK      bool             `json:"ok,omitempty"`   // msgRoom's answer, msgConn's room taken, msgSettled's room spent
}

// channel is one end of the control socket.
type channel struct {
	c   *net.UnixConn
	mu  sync.Mutex // one send at a time
	buf []byte     // recv's, reused: one reader (its readControl) at a time
}

// newChannel wraps one end of a SOCK_SEQPACKET pair.
func newChannel(f *os.File) (*channel, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("opening the control socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("opening the control socket: %T is not a Unix socket", c)
	}
	return &channel{c: uc}, nil
}

// send writes m, with fd attached when fd >= 0.
func (ch *channel) send(m message, fd int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding a %s message: %w", m.T, err)
	}
	if len(b) > maxMessage {
		return fmt.Errorf("sending a %s message: %d bytes, more than %d", m.T, len(b), maxMessage)
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if _, _, err := ch.c.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("sending a %s message: %w", m.T, err)
	}
	return nil
}

// recv reads the next message and the descriptor it carries (-1: none).
// One goroutine reads a channel: its buffer is reused (a message's decoded
// fields are copies), not 64 KiB of garbage for each of a socket's three
// messages.
func (ch *channel) recv() (message, int, error) {
	if ch.buf == nil {
		ch.buf = make([]byte, maxMessage)
	}
	buf := ch.buf
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := ch.c.ReadMsgUnix(buf, oob)
	if err != nil {
		return message{}, -1, err
	}
	fd := -1
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				fd = fds[0]
			}
		}
	}
	var m message
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return message{}, -1, fmt.Errorf("reading a control message: %w", err)
	}
	return m, fd, nil
}

func (ch *channel) close() error { return ch.c.Close() }

// socketPair makes a connected SOCK_SEQPACKET pair, close-on-exec.
func socketPair() (a, b *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("making the control socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control"), nil
}
