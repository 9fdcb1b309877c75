// Package compact is the game socket's compact encoding (docs/protocol.md),
// the WebSocket subprotocol [Protocol]: the frame header the runtime puts on
// an update's body, and a [Decoder] that turns compact updates back into the
// messages of the JSON protocol, for tests and bench/load.
package compact

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// Protocol is the subprotocol's name, as a client asks for it.
const Protocol = "hoster.compact.1"

// Update is the first byte of a compact update frame (binary); every other
// message of the compact protocol is a JSON text frame.
const Update = 0x01

// AppendHeader appends an update's frame header: the kind, the viewer's seq
// and the update's time in milliseconds as the difference from the time of
// the viewer's previous update on this connection (0 before the first).
func AppendHeader(b []byte, seq uint64, time, prevTime int64) []byte {
	b = append(b, Update)
	b = binary.AppendUvarint(b, seq)
	return binary.AppendVarint(b, time-prevTime)
}

// AppendNumber appends a number field's value x at the rounding q of its
// table (0: none): the varint 2 + zigzag(n) for an integer n that gives x
// back exactly (x itself, or x·q rounded when q > 0, x/−q rounded when
// q < 0) with |n| ≤ 2^48; else 1 and the float32 when that is exact; else
// 0 and the float64 (little-endian).
func AppendNumber(b []byte, x, q float64) []byte {
	n := x
	switch {
	case q > 0:
		n = math.Round(x * q)
	case q < 0:
		n = math.Round(x / -q)
	}
	if n == math.Trunc(n) && math.Abs(n) <= 1<<48 && (q == 0 || q > 0 && n/q == x || q < 0 && n*-q == x) {
		i := int64(n)
		return binary.AppendUvarint(b, uint64(i<<1^i>>63)+2)
	}
	if float64(float32(x)) == x {
		return binary.LittleEndian.AppendUint32(append(b, 1), math.Float32bits(float32(x)))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0), math.Float64bits(x))
}

// Field is one field of a type's table.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"` // number, integer, string, boolean
	// Q rounds numbers: a varint n is n/Q when Q > 0, n·(−Q) when Q < 0.
	Q float64 `json:"q,omitempty"`
}

// Type is one type's table: types are numbered by their place in the list,
// the player first (with its private fields, sent only to their player).
type Type struct {
	Type    string  `json:"type"`
	Fields  []Field `json:"fields"`
	Private []Field `json:"private,omitempty"`
}

// Thing is an appear or a change as the JSON protocol has it.
type Thing struct {
	ID   string         `json:"id"`
	Type string         `json:"type,omitempty"`
	F    map[string]any `json:"f"`
}

// Message is an update as the JSON protocol has it.
type Message struct {
	T      string   `json:"t"`
	Seq    uint64   `json:"seq"`
	Time   int64    `json:"time"`
	Appear []Thing  `json:"appear,omitempty"`
	Change []Thing  `json:"change,omitempty"`
	Gone   []string `json:"gone,omitempty"`
}

// Decoder follows one connection: the tables of its welcome (and of any
// later "types" message), its player, the things it knows by handle, and
// the time of its previous update.
type Decoder struct {
	types   []Type
	me      string
	handles map[uint64]handle
	time    int64
}

type handle struct {
	id  string
	typ int
}

// Text takes a JSON text frame of the compact protocol: a welcome (which
// starts over) or a "types" message (new tables after a hot reload) update
// the decoder; others are left to the caller.
func (d *Decoder) Text(frame []byte) error {
	var m struct {
		T      string `json:"t"`
		Player string `json:"player"`
		Types  []Type `json:"types"`
	}
	if err := json.Unmarshal(frame, &m); err != nil {
		return fmt.Errorf("reading a text frame: %w", err)
	}
	switch m.T {
	case "welcome":
		if m.Types == nil {
			return errors.New("reading the welcome: no field tables")
		}
		d.types, d.me, d.handles, d.time = m.Types, m.Player, map[uint64]handle{}, 0
	case "types":
		d.types = m.Types
	}
	return nil
}

var errShort = errors.New("the frame ends early")

type reader struct {
	b   []byte
	pos int
}

func (r *reader) uint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		return 0, errShort
	}
	r.pos += n
	return v, nil
}

// each reads a count and then that many items with item.
func (r *reader) each(item func() error) error {
	count, err := r.uint()
	if err != nil {
		return err
	}
	for range count {
		if err := item(); err != nil {
			return err
		}
	}
	return nil
}

// known is the thing of handle h, which an appear must have told of.
func (d *Decoder) known(h uint64, what string) (handle, error) {
	t, ok := d.handles[h]
	if !ok {
		return handle{}, fmt.Errorf("%s of handle %d, which it was never told of", what, h)
	}
	return t, nil
}

func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, errShort
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// mask reads a field mask: bit k+1 for field k, bit 0 the flag.
func (r *reader) mask() ([]bool, error) {
	var bits []bool
	for {
		if r.pos >= len(r.b) {
			return nil, errShort
		}
		c := r.b[r.pos]
		r.pos++
		for i := range 7 {
			bits = append(bits, c>>i&1 == 1)
		}
		if c&0x80 == 0 {
			return bits, nil
		}
		if len(bits) > 1<<16 {
			return nil, errors.New("a field mask runs on")
		}
	}
}

func (r *reader) number(q float64) (float64, error) {
	v, err := r.uint()
	if err != nil {
		return 0, err
	}
	switch v {
	case 0:
		b, err := r.bytes(8)
		if err != nil {
			return 0, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case 1:
		b, err := r.bytes(4)
		if err != nil {
			return 0, err
		}
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), nil
	}
	z := v - 2
	n := float64(z >> 1)
	if z&1 == 1 {
		n = -float64(z>>1) - 1
	}
	switch {
	case q > 0:
		return n / q, nil
	case q < 0:
		return n * -q, nil
	}
	return n, nil
}

func (r *reader) string() (string, error) {
	n, err := r.uint()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(n)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", errors.New("a string is not UTF-8")
	}
	return string(b), nil
}

// fields reads a field set by table: the values' mask, the values, and
// when its flag is set the nulls' mask.
func (r *reader) fields(table []Field) (map[string]any, error) {
	has, err := r.mask()
	if err != nil {
		return nil, err
	}
	f := map[string]any{}
	for k, fd := range table {
		if k+1 >= len(has) || !has[k+1] {
			continue
		}
		var x any
		switch fd.Type {
		case "string":
			x, err = r.string()
		case "boolean":
			var v uint64
			v, err = r.uint()
			if err == nil && v > 1 {
				err = errors.New("a boolean is not 0 or 1")
			}
			x = v == 1
		default:
			x, err = r.number(fd.Q)
		}
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fd.Name, err)
		}
		f[fd.Name] = x
	}
	for k := len(table) + 1; k < len(has); k++ {
		if has[k] {
			return nil, fmt.Errorf("field %d is not in the table of %d", k-1, len(table))
		}
	}
	if has[0] {
		nulls, err := r.mask()
		if err != nil {
			return nil, err
		}
		for k := 1; k < len(nulls); k++ {
			if !nulls[k] {
				continue
			}
			if k > len(table) {
				return nil, fmt.Errorf("null field %d is not in the table of %d", k-1, len(table))
			}
			f[table[k-1].Name] = nil
		}
	}
	return f, nil
}

// Update decodes a binary update frame into the JSON protocol's message.
// A change or gone of a handle the decoder does not know is an error: the
// server only ever sends those for things it told this connection of.
// After an error the decoder is only good for a new welcome.
func (d *Decoder) Update(frame []byte) (*Message, error) {
	if d.types == nil {
		return nil, errors.New("an update before the welcome")
	}
	if len(frame) == 0 || frame[0] != Update {
		return nil, errors.New("not an update frame")
	}
	r := &reader{b: frame, pos: 1}
	m := &Message{T: "update"}
	var err error
	if m.Seq, err = r.uint(); err != nil {
		return nil, err
	}
	dt, n := binary.Varint(r.b[r.pos:])
	if n <= 0 {
		return nil, errShort
	}
	r.pos += n
	m.Time = d.time + dt
	for _, item := range []func(*reader, *Message) error{d.appear, d.change, d.gone} {
		if err := r.each(func() error { return item(r, m) }); err != nil {
			return nil, err
		}
	}
	if r.pos != len(frame) {
		return nil, fmt.Errorf("%d bytes after the update", len(frame)-r.pos)
	}
	d.time = m.Time
	return m, nil
}

// appear reads one appear of an update into m: a new handle, its type, its
// id and every field of its table.
func (d *Decoder) appear(r *reader, m *Message) error {
	h, err := r.uint()
	if err != nil {
		return err
	}
	ti, err := r.uint()
	if err != nil {
		return err
	}
	if h == 0 || ti >= uint64(len(d.types)) {
		return fmt.Errorf("an appear of handle %d, type %d", h, ti)
	}
	id, err := r.string()
	if err != nil {
		return err
	}
	f, err := r.fields(d.types[ti].Fields)
	if err != nil {
		return fmt.Errorf("the appear of %s: %w", id, err)
	}
	d.handles[h] = handle{id: id, typ: int(ti)}
	m.Appear = append(m.Appear, Thing{ID: id, Type: d.types[ti].Type, F: f})
	return nil
}

// change reads one change of an update into m: a known handle (0: the
// viewer's own private fields) and the fields its mask names.
func (d *Decoder) change(r *reader, m *Message) error {
	id, table := d.me, d.types[0].Private
	if h, err := r.uint(); err != nil {
		return err
	} else if h != 0 {
		t, err := d.known(h, "a change")
		if err != nil {
			return err
		}
		id, table = t.id, d.types[t.typ].Fields
	}
	f, err := r.fields(table)
	if err != nil {
		return fmt.Errorf("the change of %s: %w", id, err)
	}
	m.Change = append(m.Change, Thing{ID: id, F: f})
	return nil
}

// gone reads one gone of an update into m, forgetting its handle.
func (d *Decoder) gone(r *reader, m *Message) error {
	h, err := r.uint()
	if err != nil {
		return err
	}
	t, err := d.known(h, "a gone")
	if err != nil {
		return err
	}
	delete(d.handles, h)
	m.Gone = append(m.Gone, t.id)
	return nil
}
