package runtime

import (
	goruntime "runtime"
	"sync"
	"time"

	"github.com/dop251/goja"
	"golang.org/x/sys/unix"
)

// minRecheck is the shortest wait before a budget is looked at again: a
// call close to its budget is not polled in a tight loop.
const minRecheck = 10 * time.Millisecond

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

// runBudgeted runs fn, a call into r, and interrupts it with reason once it
// has used budget of its own CPU time. Time spent waiting for a core does
// not count: on an overloaded machine a healthy call takes longer on the
// clock on the wall but no longer on its thread's clock, so it is never
// stopped, while a real endless loop still is, after about budget of its own
// running. The goroutine is locked to its OS thread for the call, so the
// thread's clock is the call's.
//
// A check that runs late, after the call ended (a busy machine may run a
// timer's function well after it expired), does nothing: it must never
// interrupt the next call.
func runBudgeted[T any](r *goja.Runtime, budget time.Duration, reason string, fn func() (T, error)) (T, error) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	clock := currentThreadClock()
	start, ok := clock.used()
	fire, end := armInterrupt(r, reason)

	var mu sync.Mutex
	running := true // false once fn returned: no more checks are armed
	var timer *time.Timer
	var check func()
	check = func() {
		mu.Lock()
		defer mu.Unlock()
		if !running {
			return
		}
		if ok {
			now, read := clock.used()
			if left := budget - (now - start); read && left > 0 {
				timer = time.AfterFunc(max(left, minRecheck), check)
				return
			}
		}
		fire()
	}
	mu.Lock()
	timer = time.AfterFunc(budget, check)
	mu.Unlock()

	res, err := fn()

	mu.Lock()
	running = false
	timer.Stop()
	mu.Unlock()
	end()
	return res, err
}
