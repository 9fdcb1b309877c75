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

// Buffer is safe for concurrent writers. The zero value is an empty Buffer
// ready to use.
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // a token after each write; made on first use
}

// New returns an empty Buffer.
func New() *Buffer { return &Buffer{} }

// wake is the channel a write signals on; w.mu must be held.
func (w *Buffer) wake() chan struct{} {
	if w.written == nil {
		w.written = make(chan struct{}, 1)
	}
	return w.written
}

func (w *Buffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wake() <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

// String is everything written so far.
func (w *Buffer) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.b.String() }

// Until waits until ok holds for everything written so far, checking it
// again after each write, and reports whether it did within timeout.
func (w *Buffer) Until(ok func(written string) bool, timeout time.Duration) bool {
	expired := time.After(timeout)
	for {
		w.mu.Lock()
		s, wake := w.b.String(), w.wake()
		w.mu.Unlock()
		if ok(s) {
			return true
		}
		select {
		case <-wake:
		case <-expired:
			return false
		}
	}
}

// WaitFor waits until what was written holds sub at least n times, and
// reports whether it did within timeout.
func (w *Buffer) WaitFor(sub string, n int, timeout time.Duration) bool {
	return w.Until(func(s string) bool { return strings.Count(s, sub) >= n }, timeout)
}
