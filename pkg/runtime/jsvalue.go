package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dop251/goja"
)

// Values from JavaScript are data, not trust. A game's code can replace any
// global, prototype method or value the prelude uses, and goja runs such
// code whenever Go converts a value (a toString, a valueOf, a getter, a
// proxy's trap), and throws through Go as a panic. So every call into a
// game's runtime and every read Go makes of what it returns happens here,
// in guarded: under the hook budget, inside a recover, with the result
// checked for shape by a reader that never converts implicitly. A failure
// is an error (a *jsError) that ends the instance, never the process.

// jsError is a failure of JavaScript, read into plain Go under the budget:
// nothing in it can run a game's code again.
type jsError struct {
	msg         string // what was thrown or went wrong
	at          string // the file:line in the game's own code, "" when unknown
	interrupted bool   // the budget ran out
}

func (e *jsError) Error() string {
	if e.at == "" {
		return e.msg
	}
	return e.msg + " (at " + e.at + ")"
}

// guarded runs fn, a call into r or a read of its values, under budget of
// CPU time and inside a recover: a goja panic (a throw or an interrupt
// outside a call), or any other, is an error; a goja error is read into a
// *jsError under the same budget. what names the call in errors.
func guarded[T any](r *goja.Runtime, budget time.Duration, sw stuckWatch, what string, fn func() (T, error)) (T, error) {
	return runBudgetedOr(r, budget, "ran longer than "+budget.String()+" of CPU time", sw, func() (res T, err error) {
		defer func() {
			if p := recover(); p != nil {
				var zero T
				res, err = zero, plainError(what, p)
			}
		}()
		res, err = fn()
		if err != nil {
			var zero T
			return zero, plainError(what, err)
		}
		return res, nil
	})
}

// plainError reads a failure (an error or a recovered panic) into a
// *jsError. Reading a thrown value's text may run the game's code (its
// toString): the caller is guarded, and a text that cannot be read is
// named so.
func plainError(what string, failure any) (err *jsError) {
	var ex *goja.Exception
	var stop *goja.InterruptedError
	switch f := failure.(type) {
	case *jsError:
		return f
	case *goja.InterruptedError:
		stop = f
	case *goja.Exception:
		ex = f
	case error:
		if !errors.As(f, &stop) && !errors.As(f, &ex) {
			return &jsError{msg: what + ": " + f.Error()}
		}
	default:
		return &jsError{msg: fmt.Sprintf("%s: %v", what, f)}
	}
	if stop != nil {
		// Its text is Go's (the reason given to Interrupt) and its stack.
		msg, at := splitStack(stop.String())
		return &jsError{msg: what + ": " + msg, at: at, interrupted: true}
	}
	defer func() {
		if recover() != nil {
			err = &jsError{msg: what + ": threw a value whose text cannot be read"}
		}
	}()
	msg, at := splitStack(ex.String())
	return &jsError{msg: what + ": " + msg, at: at}
}

// call runs hook fn with args under the budget and reads its result with
// read, in the same guarded span.
func callAs[T any](v *vm, hook string, read func(goja.Value) (T, error), fn goja.Callable, args ...goja.Value) (T, error) {
	return guarded(v.rt, v.budget, v.stuck, hook, func() (T, error) {
		res, err := fn(goja.Undefined(), args...)
		if err != nil {
			var zero T
			return zero, err
		}
		return read(res)
	})
}

// call runs hook fn and hands its result back as a JavaScript value, for
// JavaScript only (an export handed to the new code's adopt).
func (v *vm) call(hook string, fn goja.Callable, args ...goja.Value) (goja.Value, error) {
	return callAs(v, hook, func(x goja.Value) (goja.Value, error) { return x, nil }, fn, args...)
}

// The readers: each checks a value's shape without converting it (no
// toString, no valueOf), so a game's replacement of either never runs.

// kind names a value's type for an error.
func kind(x goja.Value) string {
	switch {
	case x == nil || goja.IsUndefined(x):
		return "undefined"
	case goja.IsNull(x):
		return "null"
	case goja.IsString(x):
		return "a string"
	case goja.IsNumber(x):
		return "a number"
	}
	if _, ok := x.(*goja.Object); ok {
		return "an object"
	}
	return "a " + x.ExportType().String()
}

// asString is a string primitive.
func asString(x goja.Value) (string, error) {
	if x == nil || !goja.IsString(x) {
		return "", fmt.Errorf("returned %s, not a string", kind(x))
	}
	return x.String(), nil
}

// asJSON is a string primitive holding valid JSON.
func asJSON(x goja.Value) (json.RawMessage, error) {
	s, err := asString(x)
	if err == nil && !json.Valid([]byte(s)) {
		err = errors.New("returned a string that is not JSON")
	}
	return json.RawMessage(s), err
}
