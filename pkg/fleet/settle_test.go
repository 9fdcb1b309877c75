package fleet

import (
	"context"
	"testing"
	"time"
)

// TestApplyWaitsForTheFleetsQuiet: a node writes another node's publish
// only once no manifest of the fleet changed for the quiet period (a sync
// has ended), or once the longest deferral has passed during a sync that
// goes on.
func TestApplyWaitsForTheFleetsQuiet(t *testing.T) {
	settled := func(quiet, maxDefer, since time.Duration, cancel bool) bool {
		s := &Sync{quiet: quiet, maxDefer: maxDefer}
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.changed.Store(time.Now().Add(-since).UnixNano())
		if cancel {
			s.cancel()
		}
		defer s.cancel()
		return s.settle()
	}
	if !settled(time.Hour, time.Hour, 2*time.Hour, false) {
		t.Error("an apply waited after an hour of quiet")
	}
	if settled(time.Hour, time.Hour, 0, true) {
		t.Error("an apply went on while the manifests changed a moment ago")
	}
	if !settled(time.Hour, time.Nanosecond, 0, false) {
		t.Error("an apply waited past the longest deferral")
	}
}
