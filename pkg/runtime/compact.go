package runtime

import (
	"encoding/binary"

	"github.com/dop251/goja"
	"github.com/hoster-dev/hoster/pkg/compact"
)

// compactWriter is where the prelude's compact encoder (__cbody) writes
// the bodies of a send round's updates, through functions it calls: the
// bytes are made in Go, which BenchmarkCompactHandOver found several times
// cheaper than writing them into a Uint8Array in goja. A body is known by
// its number until the round's updates are framed.
type compactWriter struct {
	buf  []byte
	ends []int // where each finished body ends in buf
	// The round's plain changes, written while the records are brought up
	// to date (__cchg), for the round's body (__cpre).
	chg  []byte
	nchg int
}

// install gives r the encoder's functions (see prelude.js).
func (w *compactWriter) install(r *goja.Runtime) {
	r.Set("__cu", func(c goja.FunctionCall) goja.Value {
		for _, a := range c.Arguments {
			w.buf = binary.AppendUvarint(w.buf, uint64(a.ToInteger()))
		}
		return goja.Undefined()
	})
	r.Set("__cbyte", func(c goja.FunctionCall) goja.Value {
		w.buf = append(w.buf, byte(c.Argument(0).ToInteger()))
		return goja.Undefined()
	})
	r.Set("__cnum", func(c goja.FunctionCall) goja.Value {
		w.buf = compact.AppendNumber(w.buf, c.Argument(0).ToFloat(), c.Argument(1).ToFloat())
		return goja.Undefined()
	})
	r.Set("__cnums", func(c goja.FunctionCall) goja.Value {
		if h := c.Argument(0).ToInteger(); h >= 0 {
			w.buf = binary.AppendUvarint(w.buf, uint64(h))
		}
		w.buf = append(w.buf, byte(c.Argument(1).ToInteger()))
		for i := 2; i+1 < len(c.Arguments); i += 2 {
			w.buf = compact.AppendNumber(w.buf, c.Arguments[i].ToFloat(), c.Arguments[i+1].ToFloat())
		}
		return goja.Undefined()
	})
	r.Set("__cchg", func(c goja.FunctionCall) goja.Value {
		w.chg = binary.AppendUvarint(w.chg, uint64(c.Argument(0).ToInteger()))
		w.chg = append(w.chg, byte(c.Argument(1).ToInteger()))
		for i := 2; i+1 < len(c.Arguments); i += 2 {
			w.chg = compact.AppendNumber(w.chg, c.Arguments[i].ToFloat(), c.Arguments[i+1].ToFloat())
		}
		w.nchg++
		return goja.Undefined()
	})
	r.Set("__cpre", func(c goja.FunctionCall) goja.Value {
		w.buf = binary.AppendUvarint(w.buf, uint64(w.nchg)+uint64(c.Argument(0).ToInteger()))
		w.buf = append(w.buf, w.chg...)
		return goja.Undefined()
	})
	r.Set("__cstr", func(c goja.FunctionCall) goja.Value {
		s := c.Argument(0).String() // UTF-8; a lone surrogate is U+FFFD
		w.buf = append(binary.AppendUvarint(w.buf, uint64(len(s))), s...)
		return goja.Undefined()
	})
	r.Set("__cend", func(goja.FunctionCall) goja.Value {
		w.ends = append(w.ends, len(w.buf))
		return r.ToValue(len(w.ends)) // from 1: never falsy in JavaScript
	})
}

// reset forgets the bodies of the last round (their bytes are reused).
func (w *compactWriter) reset() {
	w.buf, w.ends, w.chg, w.nchg = w.buf[:0], w.ends[:0], w.chg[:0], 0
}

// body is the body numbered n (as __cend returned it), nil if none.
func (w *compactWriter) body(n int64) []byte {
	i := n - 1
	if i < 0 || i >= int64(len(w.ends)) {
		return nil
	}
	start := 0
	if i > 0 {
		start = w.ends[i-1]
	}
	return w.buf[start:w.ends[i]]
}

// frame is a compact update for one viewer: the header (its seq, and the
// time against its connection's previous update) and the body.
func (w *compactWriter) frame(seq, n int64, now, prevTime int64) []byte {
	body := w.body(n)
	return append(compact.AppendHeader(make([]byte, 0, 12+len(body)), uint64(seq), now, prevTime), body...)
}
