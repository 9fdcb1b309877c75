//go:build linux

package runtime

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadClock is the CPU clock of one OS thread: the time the thread has
// run, not the time it waited for a core.
type threadClock int32

// currentThreadClock is the clock of the calling thread. The caller must be
// locked to its thread (runtime.LockOSThread) for as long as the clock is
// read: the clock follows the thread, not the goroutine.
func currentThreadClock() threadClock {
	// Linux's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED): the thread's id,
	// inverted and shifted, with the per-thread bit (4) and the scheduler
	// clock (2). Any thread of the process may read it.
	return threadClock(int32(^uint32(unix.Gettid())<<3) | 4 | 2)
}

// used is the CPU time the thread has run so far; ok is false if the clock
// cannot be read (then the budget falls back to wall time).
func (c threadClock) used() (d time.Duration, ok bool) {
	var ts unix.Timespec
	if unix.ClockGettime(int32(c), &ts) != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
