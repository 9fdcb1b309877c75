package runtime

import (
	"sync"
	"time"
)

// clock is what instances keep their schedule by: the real one by default
// (realClock), a fake in tests, so that a test can step an instance's ticks
// and send rounds without sleeping.
type clock interface {
	Now() time.Time
	// NewTimer is a stopped timer: ResetAt arms it.
	NewTimer() timer
	// AfterFunc calls f once, d from now (the resume grace, the empty
	// instance's).
	AfterFunc(d time.Duration, f func()) stopper
}

// timer fires once on C, at the time its ResetAt names (at once when that
// has passed): a time, not a wait, so that a clock moved between reading
// it and arming the timer never pushes the fire back.
type timer interface {
	C() <-chan time.Time
	ResetAt(at time.Time)
	Stop() bool
}

// realClock is the wall clock and Go's timers.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer() timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return realTimer{t}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time  { return r.t.C }
func (r realTimer) ResetAt(at time.Time) { r.t.Reset(time.Until(at)) }
func (r realTimer) Stop() bool           { return r.t.Stop() }

// stopper is a timer started by AfterFunc; Stop reports whether it stopped
// the timer before it fired.
type stopper interface{ Stop() bool }

// AfterFunc runs f in its own goroutine after d: Go's time.AfterFunc.
func (realClock) AfterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// virtualClock is a clock that moves only when told, hoster test's: its
// timers fire on the goroutine that moves it, one at a time, earliest first.
type virtualClock struct {
	mu    sync.Mutex
	now   time.Time
	armed []*virtualTimer // armed timers, in no order
}

type virtualTimer struct {
	clk *virtualClock
	at  time.Time
	on  bool
	f   func()
	ch  chan time.Time // NewTimer's
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) NewTimer() timer {
	t := &virtualTimer{clk: c, ch: make(chan time.Time, 1)}
	t.f = func() {
		select {
		case t.ch <- c.Now():
		default:
		}
	}
	return t
}

func (c *virtualClock) AfterFunc(d time.Duration, f func()) stopper {
	t := &virtualTimer{clk: c, f: f}
	t.ResetAt(c.Now().Add(d))
	return t
}

// next is when the earliest armed timer is due, and whether one is armed.
func (c *virtualClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for i, t := range c.armed {
		if i == 0 || t.at.Before(at) {
			at = t.at
		}
	}
	return at, len(c.armed) > 0
}

// set moves the clock to now; it never goes back.
func (c *virtualClock) set(now time.Time) {
	c.mu.Lock()
	if now.After(c.now) {
		c.now = now
	}
	c.mu.Unlock()
}

// fire runs the earliest timer due by now, if any, and reports whether it
// ran one.
func (c *virtualClock) fire() bool {
	c.mu.Lock()
	var due *virtualTimer
	for _, t := range c.armed {
		if !t.at.After(c.now) && (due == nil || t.at.Before(due.at)) {
			due = t
		}
	}
	if due != nil {
		c.disarmLocked(due)
	}
	c.mu.Unlock()
	if due == nil {
		return false
	}
	due.f()
	return true
}

func (c *virtualClock) disarmLocked(t *virtualTimer) bool {
	if !t.on {
		return false
	}
	t.on = false
	for i, a := range c.armed {
		if a == t {
			c.armed = append(c.armed[:i], c.armed[i+1:]...)
			break
		}
	}
	return true
}

func (t *virtualTimer) C() <-chan time.Time { return t.ch }

func (t *virtualTimer) ResetAt(at time.Time) {
	c := t.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	t.at = at
	if !t.on {
		t.on = true
		c.armed = append(c.armed, t)
	}
}

func (t *virtualTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	return t.clk.disarmLocked(t)
}
