//go:build unix

package runtime

import (
	"net"
	"syscall"
)

// sysWriter writes on a socket's descriptor without going through Go's
// poller: one write(2), which never blocks (Go's sockets are non-blocking).
type sysWriter struct{ rc syscall.RawConn }

func rawOf(c net.Conn) rawWriter {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil // TLS, or a test's pipe: the writer goroutine writes
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return sysWriter{rc}
}

// readerOf is c's descriptor for a frameReader, nil when c gives none.
func readerOf(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// readSome is one read(2) on fd (retried when a signal interrupted it);
// again: nothing to read now.
func readSome(fd uintptr, p []byte) (n int, again bool, err error) {
	for {
		n, err = syscall.Read(int(fd), p)
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, true, nil
		}
		return max(n, 0), false, err
	}
}

func (s sysWriter) tryWrite(p []byte) (int, error) {
	var n int
	var werr error
	err := s.rc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), p)
		return true // one try: never wait for the socket here
	})
	if err != nil {
		return 0, err
	}
	if werr == syscall.EAGAIN || werr == syscall.EINTR {
		return 0, errWouldBlock
	}
	if n < 0 {
		n = 0
	}
	return n, werr
}
