package runtime

import (
	"encoding/binary"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/hoster-dev/hoster/pkg/compact"
)

// The two encodings of a delta, from the records: the JSON protocol's
// update body (docs/protocol.md) and the compact one, whose types and
// fields are numbered by the tables of the welcome (tables), a thing being
// its handle (its id sent once, in its appear), numbers varints at their
// precision.

// appendJSON appends d's JSON update body without its seq and time:
// ',"appear":[...],"change":[...],"gone":[...]}', each list only when it
// has something. d must not be empty.
func (e *engine) appendJSON(b []byte, d *delta) []byte {
	sep := byte(',')
	if len(d.appear) > 0 {
		b = append(b, sep)
		b = append(b, `"appear":[`...)
		for i, r := range d.appear {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, r.id)
			b = append(b, `,"type":`...)
			b = appendJSONString(b, r.typ)
			b = append(b, `,"f":`...)
			b = appendJSONFields(b, r.ts.fields, r.v, r.fr, -1)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(d.change) > 0 {
		b = append(b, sep)
		b = append(b, `"change":[`...)
		for i, c := range d.change {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendJSONString(b, c.id)
			b = append(b, `,"f":`...)
			if c.priv != nil {
				b = appendJSONFields(b, e.sch.player.priv, c.priv, nil, -1)
			} else {
				b = appendJSONFields(b, c.r.ts.fields, c.r.v, c.r.fr, c.from)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(d.gone) > 0 {
		b = append(b, sep)
		b = append(b, `"gone":[`...)
		for i, g := range d.gone {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, g.id)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendJSONFields appends the fields of vs (with fr, those that changed
// after round from) as a JSON object; an undefined value is left out.
func appendJSONFields(b []byte, fs []fieldSpec, vs []val, fr []int, from int) []byte {
	b = append(b, '{')
	first := true
	for n := range fs {
		if vs[n].k == vUndef || (fr != nil && fr[n] <= from) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, fs[n].name)
		b = append(b, ':')
		b = appendJSONVal(b, vs[n])
	}
	return append(b, '}')
}

func appendJSONVal(b []byte, x val) []byte {
	switch x.k {
	case vNum:
		return appendJSNumber(b, x.n)
	case vStr:
		return appendJSONString(b, x.s)
	case vBool:
		if x.n != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	}
	return append(b, "null"...)
}

// appendJSNumber appends a finite number as JavaScript writes it.
func appendJSNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // -0 too
	}
	abs, format := math.Abs(f), byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // 1e-07 is 1e-7 in JavaScript
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s as JSON.stringify writes it.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c < utf8.RuneSelf {
				i++
				continue
			}
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendCompact appends d's compact body: the appears (handle, type
// number, id, fields), the changes (handle, fields), the gones (handles),
// each list after its length.
func (e *engine) appendCompact(b []byte, d *delta, has []uint8) []byte {
	b = binary.AppendUvarint(b, uint64(len(d.appear)))
	for _, r := range d.appear {
		b = binary.AppendUvarint(b, uint64(r.h))
		b = binary.AppendUvarint(b, uint64(e.tix[r.typ]))
		b = appendCompactString(b, r.id)
		b = appendCompactFields(b, r.ts.fields, r.v, r.fr, -1, has)
	}
	b = binary.AppendUvarint(b, uint64(len(d.change)))
	for _, c := range d.change {
		if c.priv != nil {
			b = binary.AppendUvarint(b, 0) // handle 0: the viewer's own private fields
			b = appendCompactFields(b, e.sch.player.priv, c.priv, nil, -1, has)
			continue
		}
		b = binary.AppendUvarint(b, uint64(c.r.h))
		b = appendCompactFields(b, c.r.ts.fields, c.r.v, c.r.fr, c.from, has)
	}
	b = binary.AppendUvarint(b, uint64(len(d.gone)))
	for _, g := range d.gone {
		b = binary.AppendUvarint(b, uint64(g.h))
	}
	return b
}

func appendCompactString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendCompactFields appends the fields of vs (with fr, those changed
// after round from): the mask of those with a value (its flag: some are
// null), their values in table order, then the mask of those that are null.
func appendCompactFields(b []byte, fs []fieldSpec, vs []val, fr []int, from int, has []uint8) []byte {
	has = has[:0]
	nulls := false
	for n := range fs {
		var h uint8 // 0: not sent, 1: a value, 2: null
		if x := vs[n]; x.k != vUndef && (fr == nil || fr[n] > from) {
			h = 1
			if x.k == vNull {
				h, nulls = 2, true
			}
		}
		has = append(has, h)
	}
	b = appendMask(b, has, 1, nulls)
	for n := range fs {
		if has[n] != 1 {
			continue
		}
		switch x := vs[n]; x.k {
		case vStr:
			b = appendCompactString(b, x.s)
		case vBool:
			b = append(b, byte(x.n))
		default:
			b = compact.AppendNumber(b, x.n, fs[n].q)
		}
	}
	if nulls {
		b = appendMask(b, has, 2, false)
	}
	return b
}

// appendMask appends which fields k have has[k] == want as a bit mask, bit
// k + 1 for field k and bit 0 the flag, 7 bits a byte, the high bit set on
// every byte but the last.
func appendMask(b []byte, has []uint8, want uint8, flag bool) []byte {
	last := 0
	for k := len(has) - 1; k >= 0; k-- {
		if has[k] == want {
			last = k + 1
			break
		}
	}
	var m byte
	if flag {
		m = 1
	}
	for j := 1; j <= last; j++ {
		if j%7 == 0 {
			b = append(b, m|128)
			m = 0
		}
		if has[j-1] == want {
			m |= 1 << (j % 7)
		}
	}
	return append(b, m)
}
