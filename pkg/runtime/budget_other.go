//go:build !linux

package runtime

import "time"

// threadClock stands for a thread's CPU clock where there is none to read:
// the budget then counts wall time.
type threadClock int32

func currentThreadClock() threadClock { return 0 }

func (threadClock) used() (time.Duration, bool) { return 0, false }
