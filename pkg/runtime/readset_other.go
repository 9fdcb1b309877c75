//go:build !linux

package runtime

import "syscall"

// sockReader is a socket in the process's read set (readset_linux.go);
// off Linux there is none, and each socket has a reading goroutine.
type sockReader struct{}

func newSockReader(syscall.RawConn, int64) *sockReader { return nil }

func (*sockReader) moveDeadline() {}

func (*sockReader) start(func(int, []byte) bool, func([]byte), func([]byte), func(int, string), func(error)) bool {
	return false
}

func (*sockReader) closing() func() { return nil }
