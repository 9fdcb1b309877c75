package runtime

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/dop251/goja"
	"github.com/hoster-dev/hoster/pkg/game"
)

// The declared fields of players and entities live in Go. A schema is a
// version's field tables, built once from its fields.json files as
// pkg/game parses them (gen bakes them into the registry; the runtime reads
// them back with game.ParseFields, nowhere else). The game's players and
// entities are things: JavaScript objects (goja DynamicObjects) whose
// declared fields are kept in Go, so that a write marks the field changed
// where it happens and the send round (engine.go) reads only what changed.
// Undeclared properties stay plain JavaScript values, private to the server.

// playerType is the type name of players in records and tables.
const playerType = "player"

// fieldSpec is one declared field.
type fieldSpec struct {
	name    string
	typ     game.FieldType
	q       float64 // how a number is rounded on the wire: see quantCode
	private bool
	interp  bool
}

// typeSpec is the fields of a player or of one entity type: fields are
// those every viewer sees, priv a player's private ones (sent only to that
// player), both in name order; index finds a declared field by name: n for
// fields[n], len(fields)+n for priv[n]; names are the same names in
// index's order, which find scans while they are few.
type typeSpec struct {
	name   string
	fields []fieldSpec
	priv   []fieldSpec
	index  map[string]int
	names  []string
}

// fewKeys is how many names a scan looks through before a map's hash is
// the cheaper lookup (a scan compares lengths first: most names differ
// there).
const fewKeys = 8

// find is the declared field named key (n of all), -1 when key is not
// one: the lookup of every property a hook reads or writes.
func (t *typeSpec) find(key string) int {
	if len(t.names) > fewKeys {
		return lookup(nil, t.index, key)
	}
	return lookup(t.names, nil, key)
}

// lookup is key's index: in m when there is one (more than fewKeys), else
// found by a scan of names; -1 when key is not there.
func lookup(names []string, m map[string]int, key string) int {
	if m != nil {
		if n, ok := m[key]; ok {
			return n
		}
		return -1
	}
	for n, name := range names {
		if name == key {
			return n
		}
	}
	return -1
}

// all is the number of declared fields, private ones included.
func (t *typeSpec) all() int { return len(t.fields) + len(t.priv) }

// spec is the declared field n (of all).
func (t *typeSpec) spec(n int) *fieldSpec {
	if n < len(t.fields) {
		return &t.fields[n]
	}
	return &t.priv[n-len(t.fields)]
}

// schema is a version's field tables.
type schema struct {
	player   *typeSpec
	entities map[string]*typeSpec
	names    []string // entity types, sorted
}

// registryFields is the fields part of the registry, as gen writes it.
type registryFields struct {
	Player   json.RawMessage            `json:"player"`
	Entities map[string]json.RawMessage `json:"entities"`
}

// newSchema parses the registry's fields.
func newSchema(raw registryFields) (*schema, error) {
	s := &schema{entities: map[string]*typeSpec{}}
	var err error
	if s.player, err = newTypeSpec(playerType, raw.Player); err != nil {
		return nil, fmt.Errorf("reading the player's fields: %w", err)
	}
	for t, f := range raw.Entities {
		if s.entities[t], err = newTypeSpec(t, f); err != nil {
			return nil, fmt.Errorf("reading the fields of entity type %s: %w", t, err)
		}
		s.names = append(s.names, t)
	}
	slices.Sort(s.names)
	return s, nil
}

func newTypeSpec(name string, raw json.RawMessage) (*typeSpec, error) {
	fields, err := game.ParseFields(raw)
	if err != nil {
		return nil, err
	}
	t := &typeSpec{name: name, index: map[string]int{}}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	}) {
		f := fields[n]
		fs := fieldSpec{name: n, typ: f.Type, q: quantCode(f.Precision), private: f.Private, interp: f.Interpolate}
		if f.Private {
			t.priv = append(t.priv, fs)
		} else {
			t.fields = append(t.fields, fs)
		}
	}
	for n := range t.fields {
		t.index[t.fields[n].name] = n
	}
	for n := range t.priv {
		t.index[t.priv[n].name] = len(t.fields) + n
	}
	for n := range t.all() {
		t.names = append(t.names, t.spec(n).name)
	}
	return t, nil
}

// quantCode is how a number of precision p is rounded on the wire: 0 not
// at all; c > 0 to the nearest 1/c (precision 0.01: c = 100, so the value
// sent is the short decimal 12.35); c < 0 to the nearest multiple of -c.
func quantCode(p float64) float64 {
	if !(p > 0) {
		return 0
	}
	inv := 1 / p
	r := jsRound(inv)
	if r >= 1 && math.Abs(inv-r) < 1e-9*inv {
		return r
	}
	return -p
}

// jsRound is JavaScript's Math.round (halves up), as goja computes it.
func jsRound(f float64) float64 {
	if math.IsNaN(f) || f == 0 {
		return f
	}
	t := math.Trunc(f)
	if f >= 0 {
		if f-t >= 0.5 {
			return t + 1
		}
	} else if t-f > 0.5 {
		return t - 1
	}
	return t
}

// quant rounds x by code c (see quantCode).
func quant(x, c float64) float64 {
	if c > 0 {
		return jsRound(x*c) / c
	}
	return jsRound(x/-c) * -c
}

// A val is a field's value as sent: undefined (a field no value was taken
// for yet), null, a number, a string or a boolean.
type val struct {
	k uint8
	n float64 // a number; a boolean is 0 or 1
	s string
}

const (
	vUndef uint8 = iota
	vNull
	vNum
	vStr
	vBool
)

var nullVal = val{k: vNull}

// toVal reads a JavaScript value of a declared field as sent: undefined and
// numbers that are not finite are null. ok is false for a value that is not
// of the field's type; such a value is never sent.
func toVal(x goja.Value, f *fieldSpec) (v val, ok bool) {
	if x == nil || goja.IsUndefined(x) || goja.IsNull(x) {
		return nullVal, true
	}
	if v, ok = scalar(x); !ok {
		return val{}, false
	}
	switch v.k {
	case vNull:
		return nullVal, true
	case vStr:
		return v, f.typ == game.String
	case vBool:
		return v, f.typ == game.Boolean
	}
	switch f.typ {
	case game.Number:
		if f.q != 0 {
			v.n = quant(v.n, f.q)
		}
		return v, true
	case game.Integer:
		return v, v.n == math.Trunc(v.n)
	}
	return v, false
}

var (
	int64Type   = reflect.TypeOf(int64(0))
	float64Type = reflect.TypeOf(float64(0))
	stringType  = reflect.TypeOf("")
	boolType    = reflect.TypeOf(false)
)

// scalar is x as Export gives it, if a number (null when not finite), a
// string or a boolean; ok is false for anything else. A primitive is read
// without Export, which would box its number.
func scalar(x goja.Value) (val, bool) {
	if _, obj := x.(*goja.Object); !obj {
		switch x.ExportType() {
		case int64Type:
			return val{k: vNum, n: x.ToFloat()}, true
		case float64Type:
			return number(x.ToFloat()), true
		case stringType:
			return val{k: vStr, s: x.String()}, true
		case boolType:
			return boolean(x.ToBoolean()), true
		}
		return val{}, false
	}
	switch e := x.Export().(type) {
	case int64:
		return val{k: vNum, n: float64(e)}, true
	case float64:
		return number(e), true
	case string:
		return val{k: vStr, s: e}, true
	case bool:
		return boolean(e), true
	}
	return val{}, false
}

// number is f as sent: null when it is not finite.
func number(f float64) val {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nullVal
	}
	return val{k: vNum, n: f}
}

func boolean(b bool) val {
	if b {
		return val{k: vBool, n: 1}
	}
	return val{k: vBool}
}

// describe is v as the type error names it.
func describe(x goja.Value) string {
	if x == nil || goja.IsUndefined(x) {
		return "undefined"
	}
	if _, ok := x.(*goja.Object); !ok {
		if b, err := json.Marshal(x.Export()); err == nil {
			return string(b)
		}
		return x.String() // a primitive: no code of the game's runs
	}
	if b, err := json.Marshal(x.Export()); err == nil {
		return string(b)
	}
	return kind(x)
}

// typeError is the message of a field given a value of another type.
func typeError(f *fieldSpec, owner string, x goja.Value) string {
	if owner == playerType {
		owner = "a player"
	}
	want := "a " + string(f.typ)
	if f.typ == game.Integer {
		want = "an integer"
	}
	return "field " + f.name + " of " + owner + " must be " + want + ", not " + describe(x) + ": the value is not sent"
}

// thing is a player or an entity as hooks see it: a DynamicObject whose
// declared fields are kept here and whose other properties are plain
// values. keys keeps the properties' order, as JavaScript's own objects do.
type thing struct {
	v     *vm
	ts    *typeSpec
	vals  []goja.Value // the declared fields; nil: not set
	dirty []bool       // written since the send round last read them
	dirt  bool         // some field is dirty
	extra extras
	keys  []string
	// kind is extra["type"] (nil when not there), kept apart so that the
	// entities' ticks read an entity's type without a lookup.
	kind goja.Value
}

var thingType = reflect.TypeOf((*thing)(nil))

// newThing is a thing of type ts in v's runtime, as a JavaScript object.
func (v *vm) newThing(ts *typeSpec) (*thing, *goja.Object) {
	t := &thing{v: v, ts: ts, vals: make([]goja.Value, ts.all()), dirty: make([]bool, ts.all())}
	return t, v.rt.NewDynamicObject(t)
}

// thingOf is o's thing, nil when o is not one (an object the game made).
func thingOf(o *goja.Object) *thing {
	if o.ExportType() != thingType {
		return nil
	}
	t, _ := o.Export().(*thing)
	return t
}

func (t *thing) Get(key string) goja.Value {
	if n := t.ts.find(key); n >= 0 {
		return t.vals[n]
	}
	return t.extra.get(key)
}

// Set stores a value; a declared field's write marks it changed, and one
// of the wrong type is reported at once, with the writer's file:line (it
// is never sent: the viewers keep the last value of the field's type).
func (t *thing) Set(key string, x goja.Value) bool {
	if n := t.ts.find(key); n >= 0 {
		if t.vals[n] == nil {
			t.keys = append(t.keys, key)
		}
		if x == nil {
			x = goja.Undefined()
		}
		t.vals[n] = x
		t.dirty[n], t.dirt = true, true
		if f := t.ts.spec(n); !goja.IsUndefined(x) && !goja.IsNull(x) {
			if _, ok := toVal(x, f); !ok {
				t.v.badField(t.ts.name, f, x, callerIn(t.v.rt))
			}
		}
		return true
	}
	if t.extra.set(key, x) {
		t.keys = append(t.keys, key)
	}
	if key == "type" {
		t.kind = x
	}
	return true
}

func (t *thing) Has(key string) bool {
	if n := t.ts.find(key); n >= 0 {
		return t.vals[n] != nil
	}
	return t.extra.at(key) >= 0
}

func (t *thing) Delete(key string) bool {
	if n := t.ts.find(key); n >= 0 {
		if t.vals[n] == nil {
			return true
		}
		t.vals[n] = nil
		t.dirty[n], t.dirt = true, true
	} else if t.extra.del(key) {
		if key == "type" {
			t.kind = nil
		}
	} else {
		return true
	}
	t.keys = slices.DeleteFunc(t.keys, func(k string) bool { return k == key })
	return true
}

func (t *thing) Keys() []string { return slices.Clone(t.keys) }

// extras are a thing's undeclared properties. A thing has a few: they are
// found by a scan, cheaper than a map's hash, and through a map (m, their
// indexes) once they are more than fewKeys.
type extras struct {
	keys []string
	vals []goja.Value
	m    map[string]int
}

// at is key's index in keys, -1 when it is not there.
func (p *extras) at(key string) int { return lookup(p.keys, p.m, key) }

func (p *extras) get(key string) goja.Value {
	if n := p.at(key); n >= 0 {
		return p.vals[n]
	}
	return nil
}

// set stores x under key, and reports whether key is new.
func (p *extras) set(key string, x goja.Value) bool {
	if n := p.at(key); n >= 0 {
		p.vals[n] = x
		return false
	}
	p.keys, p.vals = append(p.keys, key), append(p.vals, x)
	if p.m != nil {
		p.m[key] = len(p.keys) - 1
	} else if len(p.keys) > fewKeys {
		p.index()
	}
	return true
}

// del removes key, and reports whether it was there.
func (p *extras) del(key string) bool {
	n := p.at(key)
	if n < 0 {
		return false
	}
	p.keys, p.vals = slices.Delete(p.keys, n, n+1), slices.Delete(p.vals, n, n+1)
	if p.m != nil {
		p.index()
	}
	return true
}

// index makes m.
func (p *extras) index() {
	p.m = make(map[string]int, len(p.keys))
	for n, k := range p.keys {
		p.m[k] = n
	}
}

// value is declared field n as sent, and whether it is of its type.
func (t *thing) value(n int) (val, bool) {
	return toVal(t.vals[n], t.ts.spec(n))
}

// badField reports, once per field and instance, a value of the wrong type
// in a declared field; at is the game's file:line that wrote it, if known.
func (v *vm) badField(owner string, f *fieldSpec, x goja.Value, at string) {
	key := owner + "." + f.name
	if v.eng.bad[key] {
		return
	}
	v.eng.bad[key] = true
	text := typeError(f, owner, x)
	if at != "" {
		text += "\n    at " + at + ":0(0)"
	}
	v.herrs = append(v.herrs, hookErr{where: "fields", text: text})
}

// thingMap is instance.players or instance.entities: a DynamicObject that
// keeps its ids in the order they were added, as JavaScript's objects keep
// such keys, so that the send round walks it in Go without asking goja
// for its keys.
type thingMap struct {
	ids  []string
	objs map[string]mapEntry
	// gen counts the Sets and Deletes; ents is ids' entries in their
	// order as of the last entries (fresh: no Set or Delete since), so
	// that walking an unchanged map looks nothing up.
	gen   uint64
	ents  []mapEntry
	fresh bool
}

// mapEntry is a value of a thingMap and, when it is a thing, the thing,
// found once when it was set.
type mapEntry struct {
	obj goja.Value
	t   *thing
}

var thingMapType = reflect.TypeOf((*thingMap)(nil))

func (m *thingMap) Get(key string) goja.Value { return m.objs[key].obj }

func (m *thingMap) Set(key string, x goja.Value) bool {
	if _, ok := m.objs[key]; !ok {
		m.ids = append(m.ids, key)
	}
	e := mapEntry{obj: x}
	if o, ok := x.(*goja.Object); ok {
		e.t = thingOf(o)
	}
	if m.objs == nil {
		m.objs = map[string]mapEntry{}
	}
	m.objs[key] = e
	m.gen, m.fresh = m.gen+1, false
	return true
}

// at is the value of key and, when it is a thing, the thing.
func (m *thingMap) at(key string) (goja.Value, *thing) {
	e := m.objs[key]
	return e.obj, e.t
}

func (m *thingMap) Has(key string) bool {
	_, ok := m.objs[key]
	return ok
}

func (m *thingMap) Delete(key string) bool {
	if _, ok := m.objs[key]; ok {
		delete(m.objs, key)
		m.ids = slices.DeleteFunc(m.ids, func(k string) bool { return k == key })
		m.gen, m.fresh = m.gen+1, false
	}
	return true
}

// entries is ids' entries, in their order, good until the next Set or
// Delete (gen tells); after one, the first call looks them up again.
func (m *thingMap) entries() []mapEntry {
	if !m.fresh {
		clear(m.ents)
		m.ents = m.ents[:0]
		for _, id := range m.ids {
			m.ents = append(m.ents, m.objs[id])
		}
		m.fresh = true
	}
	return m.ents
}

func (m *thingMap) Keys() []string { return slices.Clone(m.ids) }

// thingMapOf is o's thingMap, nil when o is not one (the game replaced
// instance.players or instance.entities with an object of its own).
func thingMapOf(o *goja.Object) *thingMap {
	if o.ExportType() != thingMapType {
		return nil
	}
	m, _ := o.Export().(*thingMap)
	return m
}
