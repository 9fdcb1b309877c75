package runtime

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// frameReader reads a player's frames straight off its socket, instead of
// gorilla/websocket's reader, where the socket gives its descriptor
// (readerOf). It reads inside one long wait on Go's poller (RawConn.Read):
// after a read that did not fill its buffer it waits for the socket's next
// readiness rather than reading again, so that a command costs one read(2)
// where a blocking reader makes two (the second finding nothing). Frames
// are checked as gorilla checks them (RFC 6455 5.2): a protocol error
// closes with 1002 and its reason, a message over the read limit with
// 1009, a close frame is answered with its code.
type frameReader struct {
	limit int64
	buf   []byte // read, not yet taken: buf[at:]
	at    int
	msg   []byte // a fragmented message's payload so far
	op    int    // its opcode; 0: no message under way
	err   error  // why reading ended
}

// minRead is the room each read(2) has at least.
const minRead = 4096

// errFrameLimit ends a socket whose message is over the read limit (gorilla's
// ErrReadLimit).
var errFrameLimit = websocket.ErrReadLimit

// run reads and takes frames until the socket ends or message (each data
// message: its opcode and payload, good until message returns) says stop;
// control says what to do with a ping (answered) or a pong. It returns why
// it ended: a *websocket.CloseError for a close frame.
func (f *frameReader) run(rc syscall.RawConn, message func(op int, data []byte) bool, ping, pong func(data []byte), closeWith func(code int, reason string)) error {
	err := rc.Read(func(fd uintptr) bool {
		return f.readReady(fd, message, ping, pong, closeWith)
	})
	if f.err == nil {
		f.err = err
	}
	return f.err
}

// readReady reads what fd has now and takes its whole frames; it reports
// whether the socket is done with (f.err says why). After a read that did
// not fill its room it returns false without reading again: the socket is
// drained, its next readiness says when to call it again.
func (f *frameReader) readReady(fd uintptr, message func(int, []byte) bool, ping, pong func([]byte), closeWith func(int, string)) bool {
	for {
		if cap(f.buf)-len(f.buf) < minRead {
			f.compact()
		}
		n, again, rerr := readSome(fd, f.buf[len(f.buf):cap(f.buf)])
		switch {
		case again:
			return false // wait for the socket
		case rerr != nil:
			f.err = rerr
			return true
		case n == 0:
			f.err = errors.New("the player's socket ended without a close frame")
			return true
		}
		short := n < cap(f.buf)-len(f.buf)
		f.buf = f.buf[:len(f.buf)+n]
		if f.take(message, ping, pong, closeWith) {
			return true
		}
		if short {
			return false // drained: wait for its next readiness
		}
	}
}

// compact moves what is not taken to the buffer's start, and makes room
// for at least minRead more (and for the frame under way, whole).
func (f *frameReader) compact() {
	rest := len(f.buf) - f.at
	need := rest + minRead
	if n := f.frameLen(); n > need {
		need = n
	}
	if cap(f.buf) < need || cap(f.buf) > 4*minRead && need <= minRead {
		nb := make([]byte, rest, need)
		copy(nb, f.buf[f.at:])
		f.buf = nb
	} else {
		f.buf = f.buf[:copy(f.buf, f.buf[f.at:])]
	}
	f.at = 0
}

// frameLen is the whole length of the frame at f.at once its header is
// in, 0 before; a length past the read limit counts as 0 (take ends the
// socket first).
func (f *frameReader) frameLen() int {
	h, n, ok := f.header()
	if !ok || n > f.limit+maxControl {
		return 0
	}
	return h + int(n)
}

// maxControl is a control frame's largest payload.
const maxControl = 125

// header is the header length and payload length of the frame at f.at;
// ok false while its header is not all in.
func (f *frameReader) header() (h int, n int64, ok bool) {
	p := f.buf[f.at:]
	if len(p) < 2 {
		return 0, 0, false
	}
	h, n = 2, int64(p[1]&0x7f)
	switch n {
	case 126:
		h = 4
	case 127:
		h = 10
	}
	if p[1]&0x80 != 0 {
		h += 4
	}
	if len(p) < h {
		return 0, 0, false
	}
	switch n {
	case 126:
		n = int64(binary.BigEndian.Uint16(p[2:]))
	case 127:
		n = int64(binary.BigEndian.Uint64(p[2:]))
	}
	return h, n, true
}

// take handles every whole frame read; it reports whether the socket is
// done with (f.err says why).
func (f *frameReader) take(message func(int, []byte) bool, ping, pong func([]byte), closeWith func(int, string)) bool {
	for {
		h, n, ok := f.header()
		if !ok {
			return false
		}
		p := f.buf[f.at:]
		final, op := p[0]&0x80 != 0, int(p[0]&0x0f)
		if n < 0 { // a 64-bit length with its top bit set (RFC 6455 5.2: must be 0), of any frame
			closeWith(websocket.CloseMessageTooBig, "")
			f.err = errFrameLimit
			return true
		}
		if reason := f.check(p[0], p[1], op, final, n); reason != "" {
			closeWith(websocket.CloseProtocolError, reason)
			f.err = errors.New("websocket: " + reason)
			return true
		}
		if op < 8 && f.limit > 0 && int64(len(f.msg))+n > f.limit {
			closeWith(websocket.CloseMessageTooBig, "")
			f.err = errFrameLimit
			return true
		}
		if int64(len(p)) < int64(h)+n {
			return false
		}
		payload := p[h : h+int(n)]
		maskBytes(p[h-4:h], payload)
		f.at += h + int(n)
		switch {
		case op == websocket.PingMessage:
			ping(payload)
		case op == websocket.PongMessage:
			pong(payload)
		case op == websocket.CloseMessage:
			f.err = closeFrame(payload, closeWith)
			return true
		case final && f.op == 0: // a whole message in one frame
			if !message(op, payload) {
				return true
			}
		default: // a fragment
			if op != 0 {
				f.op = op
			}
			f.msg = append(f.msg, payload...)
			if final {
				op, msg := f.op, f.msg
				f.op, f.msg = 0, f.msg[:0]
				if !message(op, msg) {
					return true
				}
			}
		}
	}
}

// check is what is wrong with a frame's header, as gorilla words it; ""
// when nothing.
func (f *frameReader) check(b0, b1 byte, op int, final bool, n int64) string {
	var errs []string
	for i, bit := range []byte{0x40, 0x20, 0x10} {
		if b0&bit != 0 {
			errs = append(errs, "RSV"+strconv.Itoa(i+1)+" set")
		}
	}
	switch op {
	case websocket.CloseMessage, websocket.PingMessage, websocket.PongMessage:
		if n > maxControl {
			errs = append(errs, "len > 125 for control")
		}
		if !final {
			errs = append(errs, "FIN not set on control")
		}
	case websocket.TextMessage, websocket.BinaryMessage:
		if f.op != 0 {
			errs = append(errs, "data before FIN")
		}
	case 0:
		if f.op == 0 {
			errs = append(errs, "continuation after FIN")
		}
	default:
		errs = append(errs, "bad opcode "+strconv.Itoa(op))
	}
	if b1&0x80 == 0 {
		errs = append(errs, "bad MASK")
	}
	return strings.Join(errs, ", ")
}

// closeFrame answers a close frame (closeWith its code) and returns it as
// gorilla does: a *websocket.CloseError, or the protocol error it is.
func closeFrame(payload []byte, closeWith func(int, string)) error {
	code, text := websocket.CloseNoStatusReceived, ""
	bad := ""
	switch {
	case len(payload) == 1:
		bad = "invalid close frame"
	case len(payload) >= 2:
		code, text = int(binary.BigEndian.Uint16(payload)), string(payload[2:])
		if !validCloseCode(code) {
			bad = "bad close code " + strconv.Itoa(code)
		} else if !utf8.ValidString(text) {
			bad = "invalid utf8 payload in close frame"
		}
	}
	if bad != "" {
		closeWith(websocket.CloseProtocolError, bad)
		return errors.New("websocket: " + bad)
	}
	closeWith(code, "")
	return &websocket.CloseError{Code: code, Text: text}
}

// validCloseCode is gorilla's rule for a close code a peer may send.
func validCloseCode(code int) bool {
	switch code {
	case 1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013:
		return true
	}
	return code >= 3000 && code <= 4999
}

// maskBytes unmasks a client frame's payload in place (RFC 6455 5.3).
func maskBytes(key, b []byte) {
	for i := range b {
		b[i] ^= key[i&3]
	}
}
