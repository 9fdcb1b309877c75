package runtime

import (
	"math"
	"sort"

	"github.com/dop251/goja"
)

// gameTimer is one of instance.after's or instance.every's: it runs at at (ms
// on the instance's clock), every ms again when it repeats. A move to new
// code drops them, as the game's guide says.
type gameTimer struct {
	at, every float64
	fn        goja.Callable
	dead      bool
}

// timerFunc is instance.after (repeat false) or instance.every: (seconds,
// fn) starts a timer and returns {cancel}.
func (v *vm) timerFunc(repeat bool) func(goja.FunctionCall) goja.Value {
	name, want := "after", "non-negative"
	if repeat {
		name, want = "every", "positive"
	}
	return func(c goja.FunctionCall) goja.Value {
		r := v.rt
		fn, ok := goja.AssertFunction(c.Argument(1))
		if !ok {
			panic(r.NewTypeError(name + ": the second argument must be a function"))
		}
		ms := c.Argument(0).ToFloat() * 1000
		if !(ms >= 0) || math.IsInf(ms, 0) || (repeat && ms <= 0) {
			panic(rangeError(r, name+": seconds must be a "+want+" number, not "+c.Argument(0).String()))
		}
		t := &gameTimer{at: float64(v.now) + ms, fn: fn}
		if repeat {
			t.every = ms
		}
		v.timers = append(v.timers, t)
		handle := r.NewObject()
		handle.Set("cancel", func(goja.FunctionCall) goja.Value {
			t.dead = true
			return goja.Undefined()
		})
		return handle
	}
}

// rangeError is a JavaScript RangeError with msg, to throw (panic with)
// from a Go function (the global RangeError, as the prelude used).
func rangeError(r *goja.Runtime, msg string) goja.Value {
	if ctor, ok := goja.AssertConstructor(r.Get("RangeError")); ok {
		if o, err := ctor(nil, r.ToValue(msg)); err == nil {
			return o
		}
	}
	return r.NewTypeError(msg)
}

// runTimers calls the timers that are due, earliest first; one that throws
// is logged as a timer's error (and counts as a tick that threw).
func (v *vm) runTimers() error {
	if len(v.timers) == 0 {
		return nil
	}
	now := float64(v.now)
	var due, keep []*gameTimer
	for _, t := range v.timers {
		switch {
		case t.dead:
		case t.at <= now:
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	v.timers = keep
	sort.SliceStable(due, func(i, j int) bool { return due[i].at < due[j].at })
	for _, t := range due {
		if t.dead {
			continue
		}
		if t.every > 0 {
			t.at += t.every
			if t.at <= now {
				t.at = now + t.every
			}
			v.timers = append(v.timers, t)
		}
		if err := v.callHook(hook{fn: t.fn, this: goja.Undefined()}, "timer", "", "", v.inst); err != nil {
			return err
		}
	}
	return nil
}
