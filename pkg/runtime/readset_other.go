//go:build !linux

package runtime

import (
	"net"
	"time"
)

// sockReader is a socket in the process's read set (readset_linux.go);
// off Linux there is none, and each socket has a reading goroutine.
type sockReader struct{ fd int32 }

func detach(net.Conn) (int, func() error, bool) { return -1, nil, false }

func newSockReader(int, int64) *sockReader { return nil }

func (*sockReader) moveDeadline() {}

func (*sockReader) start(func(int, []byte) bool, func([]byte), func([]byte), func(int, string), func(error)) bool {
	return false
}

func (*sockReader) closing() func() { return nil }

func (*sockReader) waitWritable(time.Time) error { return errWouldBlock }

func readPending() {}

func writeFD(int, []byte) (int, error) { return 0, errWouldBlock }

func closeFD(int) {}
