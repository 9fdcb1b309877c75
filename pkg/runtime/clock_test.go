package runtime

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stepClock is a schedule clock that moves only when Advance says; armed gets a token each time a
// timer is set, so a test knows the instance is waiting for its next step.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	armed  chan struct{}
}

func newStepClock() *stepClock {
	return &stepClock{now: testEpoch, armed: make(chan struct{}, 64)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) NewTimer() timer {
	t := &fakeTimer{clk: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	return t
}

// Advance moves the clock on by d and fires the timers that fall due.
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var funcs []func()
	for _, t := range c.timers {
		if t.on && !t.at.After(c.now) {
			t.on = false
			if t.f != nil {
				funcs = append(funcs, t.f)
			} else {
				t.ch <- c.now
			}
		}
	}
	c.mu.Unlock()
	for _, f := range funcs {
		f()
	}
}

// waitArmed returns once a timer has been set since the last call.
func (c *stepClock) waitArmed(t *testing.T) {
	t.Helper()
	select {
	case <-c.armed:
	case <-t.Context().Done():
		t.Fatal("the instance never waited for its next step")
	}
}

// waitJoinQueued returns once an instance of g has a join waiting for its
// next step: a test stepping the clock must not run that step before the
// join is there.
func waitJoinQueued(t *testing.T, g *Game) {
	t.Helper()
	guard := time.After(10 * time.Second) // a hang guard
	for {
		for _, in := range g.snapshot() {
			in.mu.Lock()
			n := len(in.events)
			in.mu.Unlock()
			if n > 0 {
				return
			}
		}
		select {
		case <-guard:
			t.Fatal("no join was queued")
		case <-time.After(time.Millisecond):
		}
	}
}

type fakeTimer struct {
	clk *stepClock
	ch  chan time.Time
	at  time.Time
	on  bool
	f   func() // AfterFunc's
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) ResetAt(at time.Time) {
	t.clk.mu.Lock()
	t.at, t.on = at, true
	t.clk.mu.Unlock()
	t.clk.armed <- struct{}{}
}

func (t *fakeTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	was := t.on
	t.on = false
	return was
}

// AfterFunc runs f from Advance when it falls due.
func (c *stepClock) AfterFunc(d time.Duration, f func()) stopper {
	t := &fakeTimer{clk: c, ch: make(chan time.Time, 1), f: f}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	t.at, t.on = c.now.Add(d), true
	c.mu.Unlock()
	return t
}

// An instance's ticks and send rounds follow the runtime's clock: advancing
// it N steps runs N ticks and N/2 send rounds (lab: 50 Hz ticks, 25 Hz
// sends, due from the instance's start: at the first tick, then every
// second one); a stall longer than maxCatchUp steps restarts the schedule with
// one tick, not a burst of the missed ones.
func TestScheduleFollowsTheClock(t *testing.T) {
	clk := newStepClock()
	var ticks, sends, stalls atomic.Int64
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4)}, func(o *Options) {
		o.clock = clk
		o.Observe = func(kind string, _ time.Duration) {
			switch kind {
			case "tick":
				ticks.Add(1)
			case "send":
				sends.Add(1)
			case "stall":
				stalls.Add(1)
			}
		}
	})
	if _, err := e.rt.place(e.rt.lookup("a.example", "lab"), "", nil, "", nil); err != nil {
		t.Fatal(err)
	}
	step := time.Second / 50
	const n = 10
	for range n {
		clk.waitArmed(t)
		clk.Advance(step)
	}
	clk.waitArmed(t)
	if ticks.Load() != n || sends.Load() != 1+n/2 {
		t.Fatalf("after %d steps: %d ticks and %d send rounds, want %d and %d", n, ticks.Load(), sends.Load(), n, 1+n/2)
	}
	clk.Advance((maxCatchUp + 5) * step)
	clk.waitArmed(t)
	if ticks.Load() != n+1 || stalls.Load() != 1 {
		t.Fatalf("after a stall of %d steps: %d ticks (want %d, no burst), %d stalls (want 1)", maxCatchUp+5, ticks.Load(), n+1, stalls.Load())
	}
	clk.Advance(step)
	clk.waitArmed(t)
	if ticks.Load() != n+2 {
		t.Fatalf("a step after the stall: %d ticks, want %d", ticks.Load(), n+2)
	}
}

// An instance left with no player lives on for its game's emptyGrace, on
// the runtime's clock, then ends; 0 ends it as its last player leaves.
func TestEmptyGraceIsTheGames(t *testing.T) {
	for _, grace := range []int{30, 0} {
		clk := newStepClock()
		files := lab(4)
		files["hoster-game.json"] = fmt.Sprintf(`{"tickRate": 50, "sendRate": 25, "capacity": 4, "origins": ["*"], "emptyGrace": %d}`, grace)
		e := startWith(t, map[string]map[string]string{"a.example/lab": files}, func(o *Options) {
			o.clock = clk
			o.EmptyGrace = 0 // the game's setting applies
		})
		g := e.rt.lookup("a.example", "lab")
		if g == nil {
			t.Fatalf("emptyGrace %d: the game did not load", grace)
		}
		in, err := e.rt.place(g, "", nil, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		clk.waitArmed(t)
		in.release() // its only seat
		step := time.Second / 50
		if grace > 0 {
			clk.Advance(time.Duration(grace)*time.Second - step)
			clk.waitArmed(t)
			if in.ended() {
				t.Fatalf("emptyGrace %d: ended a step before the grace ran out", grace)
			}
		}
		// The grace runs out; the instance ends at the end of a tick that
		// follows (the next, or the one after when the tick came first).
		clk.Advance(step)
		for ticks := 1; ; ticks++ {
			select {
			case <-in.done:
			case <-clk.armed:
				if ticks == 3 {
					t.Fatalf("emptyGrace %d: the instance lived on for %d ticks after its grace", grace, ticks)
				}
				clk.Advance(step)
				continue
			case <-time.After(10 * time.Second): // a hang guard
				t.Fatalf("emptyGrace %d: the instance never ended", grace)
			}
			break
		}
		if len(g.snapshot()) != 0 {
			t.Fatalf("emptyGrace %d: the game still lists the instance", grace)
		}
	}
}
