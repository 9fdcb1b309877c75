// Package quiettest is a clock for tests of quiet periods (the store's
// reload Debouncer): it stands for time.AfterFunc, and a timer runs its
// function only when the test fires it. It imports nothing of the project,
// so tests inside pkg/store can use it too; its *Timer has the methods of
// store.QuietTimer, so a one-line adapter turns After into a store.AfterFunc.
package quiettest

import (
	"sync"
	"time"
)

// Timers records every timer armed. The zero value is ready to use.
type Timers struct {
	mu     sync.Mutex
	armed  []*Timer
	resets int
	cond   *sync.Cond // broadcast after each timer armed; made on first use
}

// Timer is one quiet period, ended only by Timers.Fire.
type Timer struct {
	m     *Timers
	f     func()
	fired bool
}

// After arms a timer that runs f when the test fires it; the duration is
// ignored.
func (m *Timers) After(_ time.Duration, f func()) *Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &Timer{m: m, f: f}
	m.armed = append(m.armed, t)
	m.wake().Broadcast()
	return t
}

// wake is m's condition, made on first use; m.mu must be held.
func (m *Timers) wake() *sync.Cond {
	if m.cond == nil {
		m.cond = sync.NewCond(&m.mu)
	}
	return m.cond
}

// WaitArmed blocks until at least n timers have been armed.
func (m *Timers) WaitArmed(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.armed) < n {
		m.wake().Wait()
	}
}

// Fire ends the i-th timer armed (from 0), running its function as its end
// would.
func (m *Timers) Fire(i int) {
	m.mu.Lock()
	t := m.armed[i]
	t.fired = true
	m.mu.Unlock()
	t.f()
}

// Armed is how many timers have been armed.
func (m *Timers) Armed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.armed)
}

// Resets is how many times any timer has been restarted.
func (m *Timers) Resets() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resets
}

// Stop reports whether t had not fired yet, as time.Timer's does.
func (t *Timer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return !t.fired
}

// Reset counts a restart of the quiet period.
func (t *Timer) Reset(time.Duration) bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	t.m.resets++
	return true
}
