// Package waitbuf is an output buffer that tests can wait on: a program or a
// goroutine writes to it while the test waits until a text has appeared,
// woken by each write instead of polling.
package waitbuf

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// Buffer is safe for concurrent writers. The zero value is not ready: use
// [New].
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // a token after each write
}

// New returns an empty Buffer.
func New() *Buffer { return &Buffer{written: make(chan struct{}, 1)} }

func (w *Buffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.written <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

// String is everything written so far.
func (w *Buffer) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.b.String() }

// WaitFor waits until what was written holds sub at least n times, and
// reports whether it did within timeout.
func (w *Buffer) WaitFor(sub string, n int, timeout time.Duration) bool {
	expired := time.After(timeout)
	for strings.Count(w.String(), sub) < n {
		select {
		case <-w.written:
		case <-expired:
			return false
		}
	}
	return true
}
