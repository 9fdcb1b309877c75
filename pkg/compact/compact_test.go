package compact

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"
)

// Every number comes back as the same float64, at every rounding.
func TestNumbersRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		x, q  float64
		bytes int // its size on the wire
	}{
		{0, 0, 1}, {1, 0, 1}, {-1, 0, 1}, {62, 0, 1}, {63, 0, 2}, {-1 << 40, 0, 6},
		{1 << 48, 0, 8}, {1<<48 + 2, 0, 9}, {1e300, 0, 9}, {0.5, 0, 5}, {0.1, 0, 9}, {-2.75, 0, 5},
		{0.33, 100, 1}, {12.35, 100, 2}, {-12.35, 100, 2}, {0.1234, 10000, 2}, {98.7654, 10000, 3},
		{math.Round(1.0/3*1e4) / 1e4, 10000, 2}, {1.0 / 3, 10000, 9}, // not at its precision: sent whole
		{0.9, -0.3, 9}, {math.Round(3) * 0.3, -0.3, 1}, {math.Round(7/0.3) * 0.3, -0.3, 1}, {math.Inf(1), 0, 5}, {math.SmallestNonzeroFloat64, 100, 9},
	} {
		b := AppendNumber(nil, tc.x, tc.q)
		r := &reader{b: b}
		got, err := r.number(tc.q)
		if err != nil || got != tc.x && !(math.IsNaN(got) && math.IsNaN(tc.x)) || r.pos != len(b) {
			t.Errorf("%v at q %v: read back %v (%v), %d of %d bytes", tc.x, tc.q, got, err, r.pos, len(b))
		}
		if len(b) != tc.bytes {
			t.Errorf("%v at q %v: %d bytes, want %d", tc.x, tc.q, len(b), tc.bytes)
		}
	}
}

const tables = `{"t":"welcome","player":"p1","types":[
  {"type":"player","fields":[{"name":"x","type":"number","q":100},{"name":"name","type":"string"},{"name":"ok","type":"boolean"}],
   "private":[{"name":"gold","type":"integer"}]},
  {"type":"mob","fields":[{"name":"a","type":"number"},{"name":"b","type":"number"},{"name":"c","type":"number"},{"name":"d","type":"number"},
    {"name":"e","type":"number"},{"name":"f","type":"number"},{"name":"g","type":"number"},{"name":"h","type":"number"}]}]}`

// frame is an update with two appears (one with a null and a field past
// the first mask byte), a change of each, the player's private field, and
// a gone.
func frame() []byte {
	b := AppendHeader(nil, 7, 1000, 0)
	b = append(b, 2)                 // appears
	b = append(b, 1, 0, 2, 'p', '1') // handle 1, player, "p1"
	b = append(b, 0b1011)            // x and ok, nulls follow
	b = AppendNumber(b, 12.35, 100)  // x
	b = append(b, 1)                 // ok
	b = append(b, 0b100)             // name is null
	b = append(b, 2, 1, 2, 'e', '1') // handle 2, mob, "e1"
	b = append(b, 0x80|0b10, 0b10)   // a, and h (bit 9: the second byte's bit 2)
	b = AppendNumber(b, 0.5, 0)      // a
	b = AppendNumber(b, -3, 0)       // h
	b = append(b, 2)                 // changes
	b = append(b, 2, 0b100)          // e1's b
	b = AppendNumber(b, 0.1, 0)      //
	b = append(b, 0, 0b10)           // my gold
	b = AppendNumber(b, 1<<40, 0)    //
	b = append(b, 1, 2)              // gone: e1
	return b
}

func TestDecoder(t *testing.T) {
	var d Decoder
	if err := d.Text([]byte(tables)); err != nil {
		t.Fatal(err)
	}
	m, err := d.Update(frame())
	if err != nil {
		t.Fatal(err)
	}
	want := &Message{T: "update", Seq: 7, Time: 1000,
		Appear: []Thing{{ID: "p1", Type: "player", F: map[string]any{"x": 12.35, "ok": true, "name": nil}}, {ID: "e1", Type: "mob", F: map[string]any{"a": 0.5, "h": -3.0}}},
		Change: []Thing{{ID: "e1", F: map[string]any{"b": 0.1}}, {ID: "p1", F: map[string]any{"gold": float64(1 << 40)}}},
		Gone:   []string{"e1"}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", m, want)
	}
	// The time of the next counts from this one; e1 is no longer known.
	next := AppendHeader(nil, 8, 1100, 1000)
	next = append(next, 0, 1, 2, 0b10)
	next = AppendNumber(next, 1, 0)
	next = append(next, 0)
	if _, err := d.Update(next); err == nil {
		t.Fatal("a change of a gone handle was taken")
	}
	next = append(AppendHeader(nil, 8, 1100, 1000), 0, 0, 0)
	if m, err := d.Update(next); err != nil || m.Time != 1100 {
		t.Fatalf("the next update: %v %v", m, err)
	}
}

// FuzzDecoder: no frame makes the decoder panic or loop, and what it takes
// it takes whole.
func FuzzDecoder(f *testing.F) {
	f.Add(frame())
	f.Add(append(AppendHeader(nil, 1, 5, 0), 0, 0, 0))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(binary.AppendUvarint([]byte{1, 1, 2, 200}, 1<<62))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		if err := d.Text([]byte(tables)); err != nil {
			t.Fatal(err)
		}
		d.Update(b)
	})
}
