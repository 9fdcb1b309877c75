package runtime

import (
	goruntime "runtime"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// minRecheck is the shortest wait before a budget is looked at again: a
// call close to its budget is not polled in a tight loop.
const minRecheck = 10 * time.Millisecond

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
	return runBudgetedOr(r, budget, reason, stuckWatch{}, fn)
}

// stuckWatch says what to do when an interrupted call does not stop: some
// of goja's builtins (a regexp's backtracking, JSON, join) never look at the
// interrupt. With a stuck function, it is called with the reason once the
// call has run grace past its interrupt; nil: the call is left to run.
type stuckWatch struct {
	grace time.Duration
	stuck func(reason string)
}

// runBudgetedOr is runBudgeted that also tells sw when the call does not
// stop after its interrupt.
func runBudgetedOr[T any](r *goja.Runtime, budget time.Duration, reason string, sw stuckWatch, fn func() (T, error)) (T, error) {
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
		if sw.stuck != nil {
			time.AfterFunc(sw.grace, func() {
				mu.Lock()
				still := running
				mu.Unlock()
				if still {
					sw.stuck(reason)
				}
			})
		}
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
