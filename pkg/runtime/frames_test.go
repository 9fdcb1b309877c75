//go:build unix

package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/gorilla/websocket"
)

// clientFrame is a frame as a client sends it: masked (unless not).
func clientFrame(fin bool, op byte, payload []byte, masked bool) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	var mask byte
	if masked {
		mask = 0x80
	}
	b := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		b = append(b, mask|byte(n))
	case n <= 0xFFFF:
		b = append(b, mask|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, mask|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if !masked {
		return append(b, payload...)
	}
	key := []byte{1, 2, 3, 4}
	b = append(b, key...)
	for i, c := range payload {
		b = append(b, c^key[i&3])
	}
	return b
}

// frameLog is what a frameReader handed on, in order.
type frameLog struct{ got []string }

func (l *frameLog) message(op int, data []byte) bool {
	l.got = append(l.got, fmt.Sprintf("msg %d %s", op, data))
	return true
}
func (l *frameLog) ping(data []byte) { l.got = append(l.got, "ping "+string(data)) }
func (l *frameLog) pong(data []byte) { l.got = append(l.got, "pong "+string(data)) }
func (l *frameLog) closeWith(code int, reason string) {
	l.got = append(l.got, fmt.Sprintf("close %d %s", code, reason))
}

// tcpPair is a connected loopback pair: the server's side gives its
// descriptor, as a player's socket does.
func tcpPair(t *testing.T) (server syscall.RawConn, client net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); client.Close() })
	return readerOf(s), client
}

// A frameReader hands on whole messages (fragmented ones put together,
// control frames between their fragments taken as they come) in order,
// however the bytes are split, and ends at a close frame with its code.
func TestFrameReaderTakesMessagesInOrder(t *testing.T) {
	long, huge := strings.Repeat("x", 200), strings.Repeat("y", 10000) // huge: more than a read's room
	var all []byte
	for _, f := range [][]byte{
		clientFrame(true, websocket.TextMessage, []byte("a"), true),
		clientFrame(false, websocket.TextMessage, []byte("he"), true),
		clientFrame(true, websocket.PingMessage, []byte("p"), true),
		clientFrame(true, 0, []byte("llo"), true),
		clientFrame(true, websocket.BinaryMessage, []byte{0}, true),
		clientFrame(true, websocket.PongMessage, nil, true),
		clientFrame(true, websocket.TextMessage, []byte(long), true),
		clientFrame(true, websocket.TextMessage, []byte(huge), true),
		clientFrame(true, websocket.CloseMessage, append([]byte{0x03, 0xe8}, "bye"...), true),
	} {
		all = append(all, f...)
	}
	want := []string{"msg 1 a", "ping p", "msg 1 hello", "msg 2 \x00", "pong ", "msg 1 " + long, "msg 1 " + huge, "close 1000 "}

	// Over a socket, all in one write.
	rc, client := tcpPair(t)
	if _, err := client.Write(all); err != nil {
		t.Fatal(err)
	}
	var l frameLog
	f := &frameReader{limit: 1 << 15}
	err := f.run(rc, l.message, l.ping, l.pong, l.closeWith)
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 1000 || ce.Text != "bye" {
		t.Fatalf("the reader ended with %v, want the close frame's 1000 bye", err)
	}
	if got := strings.Join(l.got, "|"); got != strings.Join(want, "|") {
		t.Fatalf("over a socket the reader handed on\n%q\nwant\n%q", l.got, want)
	}

	// A byte at a time: each read ends inside a frame.
	l = frameLog{}
	f = &frameReader{limit: 1 << 15, buf: make([]byte, 0, len(all))}
	for i := range all {
		f.buf = append(f.buf, all[i])
		if f.take(l.message, l.ping, l.pong, l.closeWith) {
			if i != len(all)-1 {
				t.Fatalf("the reader ended at byte %d of %d: %v", i, len(all), f.err)
			}
		}
	}
	if got := strings.Join(l.got, "|"); got != strings.Join(want, "|") {
		t.Fatalf("a byte at a time the reader handed on\n%q\nwant\n%q", l.got, want)
	}
}

// What gorilla refuses, a frameReader refuses the same way: a protocol
// error closes with 1002 and gorilla's words, a message over the limit
// with 1009, a socket that ends is an error.
func TestFrameReaderRefusesBadFrames(t *testing.T) {
	for _, c := range []struct {
		name  string
		bytes []byte
		close string
	}{
		{"unmasked", clientFrame(true, websocket.TextMessage, []byte("a"), false), "close 1002 bad MASK"},
		{"bad opcode", clientFrame(true, 3, nil, true), "close 1002 bad opcode 3"},
		{"reserved bit", append([]byte{0x80 | 0x40 | 1}, clientFrame(true, 1, []byte("a"), true)[1:]...), "close 1002 RSV1 set"},
		{"continuation first", clientFrame(true, 0, []byte("a"), true), "close 1002 continuation after FIN"},
		{"data inside a message", append(clientFrame(false, 1, []byte("a"), true), clientFrame(true, 1, []byte("b"), true)...), "close 1002 data before FIN"},
		{"long control", clientFrame(true, websocket.PingMessage, bytes.Repeat([]byte("p"), 126), true), "close 1002 len > 125 for control"},
		{"bad close code", clientFrame(true, websocket.CloseMessage, []byte{0x03, 0xed}, true), "close 1002 bad close code 1005"},
		{"over the limit", clientFrame(true, 1, bytes.Repeat([]byte("a"), 17), true), "close 1009 "},
		{"fragments over the limit", append(clientFrame(false, 1, bytes.Repeat([]byte("a"), 10), true), clientFrame(true, 0, bytes.Repeat([]byte("a"), 7), true)...), "close 1009 "},
		{"a length with its top bit set", []byte{0x89, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}, "close 1009 "},
		{"close without a code", clientFrame(true, websocket.CloseMessage, nil, true), "close 1005 "},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc, client := tcpPair(t)
			if _, err := client.Write(c.bytes); err != nil {
				t.Fatal(err)
			}
			var l frameLog
			err := (&frameReader{limit: 16}).run(rc, l.message, l.ping, l.pong, l.closeWith)
			if err == nil || len(l.got) == 0 || l.got[len(l.got)-1] != c.close {
				t.Fatalf("got %q and %v, want it to end with %q", l.got, err, c.close)
			}
		})
	}
	rc, client := tcpPair(t)
	client.Write(clientFrame(true, 1, []byte("a"), true))
	client.Close()
	var l frameLog
	if err := (&frameReader{limit: 16}).run(rc, l.message, l.ping, l.pong, l.closeWith); err == nil || strings.Join(l.got, "|") != "msg 1 a" {
		t.Fatalf("a socket that ended: got %q and %v", l.got, err)
	}
}

// FuzzFrameReader: whatever bytes a player sends, the frame reader neither
// panics nor hands on more than its limit, and hands on the same messages
// and close whether the bytes come at once or a byte at a time.
func FuzzFrameReader(f *testing.F) {
	f.Add(clientFrame(true, websocket.TextMessage, []byte("hello"), true))
	f.Add(append(clientFrame(false, websocket.TextMessage, []byte("he"), true), clientFrame(true, 0, []byte("llo"), true)...))
	f.Add(clientFrame(true, websocket.PingMessage, []byte("p"), true))
	f.Add(clientFrame(true, websocket.CloseMessage, []byte{0x03, 0xe8}, true))
	f.Add([]byte{0x89, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 64
		feed := func(step int) (string, bool) {
			var l frameLog
			r := &frameReader{limit: limit, buf: make([]byte, 0, len(b))}
			msg := func(op int, data []byte) bool {
				if len(data) > limit {
					t.Fatalf("a message of %d bytes passed the limit %d", len(data), limit)
				}
				return l.message(op, data)
			}
			for i := 0; i < len(b); i += step {
				r.buf = append(r.buf, b[i:min(i+step, len(b))]...)
				if r.take(msg, l.ping, l.pong, l.closeWith) {
					return strings.Join(l.got, "|"), true
				}
			}
			return strings.Join(l.got, "|"), false
		}
		whole, wholeEnded := feed(max(len(b), 1))
		single, singleEnded := feed(1)
		if whole != single || wholeEnded != singleEnded {
			t.Fatalf("at once: %q (ended %v); a byte at a time: %q (ended %v)", whole, wholeEnded, single, singleEnded)
		}
	})
}
