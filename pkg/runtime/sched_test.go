package runtime

import (
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dop251/goja"
)

// schedEnv starts games on a stepClock with n scheduler workers and the
// hook budget (0: the tests' own); ticks gets a token per tick run, started
// one per create.
func schedEnv(t *testing.T, games map[string]map[string]string, n int, budget time.Duration) (e *env, clk *stepClock, ticks, started chan struct{}, detached *atomic.Int64) {
	t.Helper()
	clk = newStepClock()
	ticks, started, detached = make(chan struct{}, 1024), make(chan struct{}, 1024), &atomic.Int64{}
	e = startWith(t, games, func(o *Options) {
		o.clock = clk
		o.workers = n
		o.MaxInstances, o.Instances = 100, 100
		if budget > 0 {
			o.HookBudget = budget
		}
		o.Observe = func(kind string, _ time.Duration) {
			switch kind {
			case "tick":
				ticks <- struct{}{}
			case "start":
				started <- struct{}{}
			case "detach":
				detached.Add(1)
			}
		}
	})
	return e, clk, ticks, started, detached
}

// token takes one from c, failing the test when none comes.
func token(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second): // a hang guard
		t.Fatalf("waiting for %s: none came", what)
	}
}

// Twenty instances run on two workers on one clock: each step of the clock
// ticks every one of them, and the goroutines do not grow with the
// instances (a goroutine and a timer each, before).
func TestSchedulerStepsManyInstancesOnFewWorkers(t *testing.T) {
	e, clk, ticks, started, _ := schedEnv(t, map[string]map[string]string{"a.example/lab": lab(4)}, 2, 0)
	g := e.rt.lookup("a.example", "lab")
	before := goruntime.NumGoroutine()
	const rooms = 20
	for r := range rooms {
		if _, err := e.rt.place(g, fmt.Sprintf("r%d", r), nil, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	for range rooms {
		token(t, started, "a create")
	}
	step := time.Second / 50
	for range 5 {
		clk.Advance(step)
		for range rooms {
			token(t, ticks, "a tick")
		}
	}
	if grown := goruntime.NumGoroutine() - before; grown >= rooms/2 {
		t.Fatalf("%d instances added %d goroutines", rooms, grown)
	}
	select {
	case <-ticks:
		t.Fatal("an instance ticked twice in a step")
	default:
	}
}

// A hook that spins until it is interrupted holds only its own goroutine:
// beside it, on a scheduler of one worker, another game's instance keeps
// ticking at every step of the clock, while the spin goes on (its budget
// here is a minute; the test interrupts it at the end).
func TestSpinningHookDoesNotStopOtherInstances(t *testing.T) {
	spin := lab(4)
	spin["hoster-instance/tick.js"] = `export default function () { for (;;) {} }`
	e, clk, ticks, started, detached := schedEnv(t, map[string]map[string]string{"a.example/spin": spin, "b.example/lab": lab(4)}, 1, time.Minute)
	spinner, err := e.rt.place(e.rt.lookup("a.example", "spin"), "", nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	token(t, started, "the spinning game's create")
	var spinRT *goja.Runtime // to interrupt the spin at the end
	e.rt.sched.mu.Lock()
	for _, sl := range e.rt.sched.queue {
		if sl.in == spinner {
			spinRT = sl.l.v.rt
		}
	}
	e.rt.sched.mu.Unlock()
	defer func() {
		spinRT.Interrupt("the test is over")
		<-spinner.done
	}()
	if _, err := e.rt.place(e.rt.lookup("b.example", "lab"), "", nil, "", nil); err != nil {
		t.Fatal(err)
	}
	token(t, started, "the other game's create")
	step := time.Second / 50
	for range 5 {
		clk.Advance(step)
		token(t, ticks, "the other game's tick") // the spinner's never ends
	}
	if spinner.ended() {
		t.Fatal("the spinning instance ended before the test interrupted it")
	}
	if detached.Load() == 0 {
		t.Fatal("the worker held by the spin was never set aside")
	}
}
