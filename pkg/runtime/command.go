package runtime

import (
	"strconv"
	"sync/atomic"
	"unicode/utf8"
)

// quickCommand reads the common shape of a command frame without
// encoding/json's reflection: {"c": "name", "a": {"arg": scalar, ...}}
// (or "a" null or absent), strings without escapes, each key once. ok is
// false for anything else, which parseCommand then reads with
// encoding/json: what quickCommand accepts it reads exactly as
// json.Unmarshal would, so the two never disagree.
func quickCommand(data []byte) (m command, ok bool) {
	s := scan{b: data}
	if !s.byte('{') {
		return command{}, false
	}
	var seenC, seenA bool
	for first := true; ; first = false {
		if s.byte('}') {
			if first || !seenC {
				return command{}, false
			}
			break
		}
		if !first && !s.byte(',') {
			return command{}, false
		}
		key, ok := s.name()
		if !ok || !s.byte(':') {
			return command{}, false
		}
		switch {
		case key == "c" && !seenC:
			seenC = true
			if m.C, ok = s.name(); !ok {
				return command{}, false
			}
		case key == "a" && !seenA:
			seenA = true
			if m.A, ok = s.args(); !ok {
				return command{}, false
			}
		default: // another key, or one twice: encoding/json's rules
			return command{}, false
		}
	}
	s.space()
	return m, s.i == len(s.b) && m.C != ""
}

// scan is quickCommand's reader over a frame.
type scan struct {
	b []byte
	i int
}

// space skips JSON's white space.
func (s *scan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte takes c, after white space, if it comes next.
func (s *scan) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8.
func (s *scan) str() (string, bool) {
	b, ok := s.strBytes()
	return string(b), ok
}

// name is str for a command's name or an argument's: the same few come in
// every frame, and are made strings once (names).
func (s *scan) name() (string, bool) {
	b, ok := s.strBytes()
	if !ok {
		return "", false
	}
	return names.of(b), true
}

// strBytes is str's bytes, in the frame.
func (s *scan) strBytes() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			str := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(str) {
				return nil, false
			}
			return str, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// nameCache keeps the strings of names seen, a few hundred at most, each
// in the slot its hash picks (the last one there stays): every reader
// shares it without a lock.
type nameCache [256]atomic.Pointer[string]

var names nameCache

// of is b as a string: the one kept when it is there, else a new one,
// kept.
func (c *nameCache) of(b []byte) string {
	h := uint32(2166136261) // FNV-1a
	for _, x := range b {
		h = (h ^ uint32(x)) * 16777619
	}
	slot := &c[h%uint32(len(c))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	str := string(b)
	slot.Store(&str)
	return str
}

// args reads "a": null, or an object of scalars with distinct keys.
func (s *scan) args() (any, bool) {
	s.space()
	if s.lit("null") {
		return nil, true
	}
	if !s.byte('{') {
		return nil, false
	}
	m := map[string]any{}
	if s.byte('}') {
		return m, true
	}
	for {
		key, ok := s.name()
		if !ok || !s.byte(':') {
			return nil, false
		}
		if _, twice := m[key]; twice {
			return nil, false
		}
		if m[key], ok = s.scalar(); !ok {
			return nil, false
		}
		if s.byte('}') {
			return m, true
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}

// scalar reads a number (as float64), a string, true, false or null.
func (s *scan) scalar() (any, bool) {
	s.space()
	if s.i >= len(s.b) {
		return nil, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case s.lit("true"):
		return true, true
	case s.lit("false"):
		return false, true
	case s.lit("null"):
		return nil, true
	}
	return nil, false
}

// lit takes the literal w if it comes next.
func (s *scan) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scan) number() (any, bool) {
	start := s.i
	s.take('-')
	if !s.take('0') && !s.digits() {
		return nil, false
	}
	if s.take('.') && !s.digits() {
		return nil, false
	}
	if s.take('e') || s.take('E') {
		if !s.take('+') {
			s.take('-')
		}
		if !s.digits() {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil { // out of range: encoding/json's error
		return nil, false
	}
	return f, true
}

// take takes c if it comes next (no white space skipped).
func (s *scan) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// digits takes one digit or more.
func (s *scan) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
