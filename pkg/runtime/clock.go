package runtime

import "time"

// clock is what instances keep their schedule by: the real one by default
// (realClock), a fake in tests, so that a test can step an instance's ticks
// and send rounds without sleeping.
type clock interface {
	Now() time.Time
	// NewTimer is a stopped timer: Reset arms it.
	NewTimer() timer
}

// timer fires once on C, d after its Reset.
type timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
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

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop()                 { r.t.Stop() }
