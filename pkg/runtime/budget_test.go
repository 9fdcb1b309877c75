//go:build linux

package runtime

import (
	"context"
	"errors"
	"log/slog"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dop251/goja"
)

// busyMachine keeps every core busy with spinning goroutines (several per
// core, so that a call competes for its core as on an overloaded server)
// until the test ends.
func busyMachine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 * goruntime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				if n%1024 == 0 {
					_ = n // a loop the compiler keeps; preemption is asynchronous
				}
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// budgetVM is a goja runtime with two host functions: burn(ms) runs on its
// thread for ms of that thread's CPU time (work), wait(ms) blocks for ms
// off the CPU (what waiting for a core looks like from the call's side).
func budgetVM(t *testing.T) *goja.Runtime {
	r := goja.New()
	r.Set("burn", func(ms int) {
		c := currentThreadClock()
		start, ok := c.used()
		if !ok {
			t.Fatal("the thread CPU clock cannot be read")
		}
		for {
			if now, _ := c.used(); now-start >= time.Duration(ms)*time.Millisecond {
				return
			}
		}
	})
	r.Set("wait", func(ms int) { <-time.After(time.Duration(ms) * time.Millisecond) })
	return r
}

// A healthy call on a busy machine: it does some work and spends far longer
// than its budget waiting, off the CPU. A wall-time budget would stop it;
// the CPU budget does not.
func TestBudgetIgnoresWaiting(t *testing.T) {
	busyMachine(t)
	r := budgetVM(t)
	const budget = 100 * time.Millisecond
	fn, err := r.RunString(`(function () { for (let k = 0; k < 3; k++) { burn(20); wait(100); } return 7; })`)
	if err != nil {
		t.Fatal(err)
	}
	call, _ := goja.AssertFunction(fn)
	start := time.Now()
	res, err := runBudgeted(r, budget, "over budget", func() (goja.Value, error) { return call(goja.Undefined()) })
	if err != nil {
		t.Fatalf("a call within its CPU budget was stopped after %v on the wall: %v", time.Since(start), err)
	}
	if res.ToInteger() != 7 {
		t.Fatalf("got %v", res)
	}
	t.Logf("60 ms of work took %v on the wall, budget %v of CPU", time.Since(start).Round(time.Millisecond), budget)
}

// A real endless loop on a busy machine is still stopped, and the runtime
// is usable again afterwards.
func TestBudgetStopsARunaway(t *testing.T) {
	busyMachine(t)
	r := budgetVM(t)
	_, err := runBudgeted(r, 100*time.Millisecond, "over budget", func() (goja.Value, error) { return r.RunString(`for (;;) {}`) })
	var ex *goja.InterruptedError
	if !errors.As(err, &ex) {
		t.Fatalf("an endless loop was not interrupted: %v", err)
	}
	v, err := runBudgeted(r, 100*time.Millisecond, "over budget", func() (goja.Value, error) { return r.RunString(`1 + 1`) })
	if err != nil || v.ToInteger() != 2 {
		t.Fatalf("the next call after an interrupt: %v %v", v, err)
	}
}

// waitingHandler makes the game's log line "wait" take d on the wall, off
// the CPU: a hook held up by something outside it, as a hook waiting for a
// core is.
type waitingHandler struct {
	slog.Handler
	d time.Duration
}

func (h waitingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return waitingHandler{h.Handler.WithAttrs(as), h.d}
}

func (h waitingHandler) WithGroup(name string) slog.Handler {
	return waitingHandler{h.Handler.WithGroup(name), h.d}
}

func (h waitingHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "msg" && a.Value.String() == "wait" {
			<-time.After(h.d)
			return false
		}
		return true
	})
	return h.Handler.Handle(ctx, r)
}

// On a machine whose every core is busy, an instance whose hook takes far
// longer than the budget on the wall, but little of its own CPU, is never
// closed; a real endless loop under the same load still is.
func TestBusyMachineClosesNoHealthyInstance(t *testing.T) {
	const budget = 200 * time.Millisecond
	game := lab(4)
	game["hoster-commands/slow/run.js"] = `export default function (i, p) {
  let s = 0;
  for (let k = 0; k < 10000; k++) s += k;
  i.log("wait");
  p.x = s > 0 ? 7 : 0;
}`
	e := startWith(t, map[string]map[string]string{"a.example/lab": game}, func(o *Options) {
		o.HookBudget = budget
		o.Logger = slog.New(waitingHandler{Handler: o.Logger.Handler(), d: 4 * budget})
	})
	busyMachine(t)
	c := e.join(t, "a.example", "lab", "c")
	for range 2 {
		c.send("slow", map[string]any{})
	}
	c.send("move", map[string]any{"dx": 1})
	c.until("the move after two slow commands", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 8.0 })
	if code := c.code(); code != 0 {
		t.Fatalf("a healthy instance was closed (%d) on a busy machine", code)
	}
	c.send("spin", map[string]any{})
	if code := c.closed(t); code != 1011 {
		t.Fatalf("an endless loop on a busy machine: closed with %d, want 1011", code)
	}
}

// A call that does not stop at its interrupt (as goja's builtins do: a
// regexp's backtracking, JSON, join; here a Go function that spins) is
// reported as stuck once its grace has passed; one that stops, or ends
// within its budget, is not.
func TestStuckCallIsReported(t *testing.T) {
	r := goja.New()
	var release atomic.Bool
	r.Set("builtin", func() {
		for !release.Load() { // spinning, on the call's thread: its CPU clock runs
		}
	})
	stuck := make(chan string, 1)
	sw := stuckWatch{grace: 50 * time.Millisecond, stuck: func(reason string) { stuck <- reason }}
	done := make(chan error, 1)
	go func() {
		_, err := runBudgetedOr(r, 50*time.Millisecond, "over budget", sw, func() (goja.Value, error) {
			return r.RunString(`builtin()`)
		})
		done <- err
	}()
	if reason := <-stuck; reason != "over budget" {
		t.Fatalf("stuck with %q, want the budget's reason", reason)
	}
	release.Store(true)
	<-done
	calm := make(chan string, 1)
	sw = stuckWatch{grace: time.Minute, stuck: func(reason string) { calm <- reason }}
	if _, err := runBudgetedOr(r, 50*time.Millisecond, "over budget", sw, func() (goja.Value, error) { return r.RunString(`for (;;) {}`) }); err == nil {
		t.Fatal("an endless loop was not interrupted")
	}
	if _, err := runBudgetedOr(r, time.Second, "over budget", sw, func() (goja.Value, error) { return r.RunString(`1 + 1`) }); err != nil {
		t.Fatal(err)
	}
	select {
	case reason := <-calm:
		t.Fatalf("a call that stopped was reported stuck: %s", reason)
	default:
	}
}
