//go:build !unix

package runtime

import (
	"errors"
	"net"
	"syscall"
)

// rawOf is nil off Unix: the writer goroutine writes everything.
func rawOf(net.Conn) rawWriter { return nil }

// readerOf is nil off Unix: gorilla's reader reads the socket.
func readerOf(net.Conn) syscall.RawConn { return nil }

// readSome is never called off Unix (readerOf gives no descriptor).
func readSome(uintptr, []byte) (int, bool, error) {
	return 0, false, errors.New("reading a socket's descriptor: not on this system")
}
