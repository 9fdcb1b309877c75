package runtime

import (
	"maps"
	"math"
	"slices"

	"github.com/dop251/goja"
)

// The engine keeps, for one instance, what its viewers were sent: one
// record per thing, updated in place every send round (its field values as
// sent, the send round each field last changed in, the round it appeared
// in); a thing that goes leaves a tombstone while a viewer that may still
// know it is behind. A viewer is then the round it last received (and,
// with a visibility hook, the set of things it knows): what changed for it
// is what changed after its round. Without a visibility hook a viewer in
// step (it received the previous round) gets the round's delta, computed
// and encoded once for all; one that is behind gets everything newer than
// its round, merged from the records. The engine outlives a move to new
// code: the records are refitted to the new field tables (refit).
type engine struct {
	sch        *schema
	visible    bool // the code has a visibility hook
	round      int
	recs       map[string]*rec
	list       []*rec // the records in the order the things appeared
	tombs      map[string]*tomb
	tlist      []*tomb // the tombstones in the order the things went
	viewers    map[string]*viewer
	nextHandle int
	counts     [3]int64        // appeared, changed, gone since takeCounts
	bad        map[string]bool // type.field: a wrong value was reported
	extra      map[string]*typeSpec
	tix        map[string]int // type numbers of the compact tables
}

// rec is the record of one thing.
type rec struct {
	id    string
	typ   string
	ts    *typeSpec
	v     []val // ts.fields' values as last sent
	fr    []int // the round each changed in
	a     int   // the round it (last) appeared in: viewers behind it get all of it
	first int   // the round it first appeared in
	seen  int   // the last round it was seen in
	h     int   // its compact handle
	obj   *goja.Object
	src   *thing // the thing whose marks it follows; another is read whole
	force bool   // refitted: its fields of round fr are sent next round
	again bool   // refitted with a field gone: it appears again, whole, next round
}

type tomb struct {
	id      string
	a, r, h int // the rounds it appeared and went in, its handle
	dead    bool
}

// viewer is what a player's connection was sent.
type viewer struct {
	round int
	known map[string]int // with a visibility hook: the ids it knows, with their handles
	stale map[string]int // after the visibility hook was dropped: what it knew, to tell gone
	seq   int64
	pv    []val // its private fields as last sent; nil: not yet
}

// A delta is what one update carries: things appeared, changed (the
// fields of r that changed after round from, or a player's own private
// fields priv) and gone.
type delta struct {
	appear []*rec
	change []change
	gone   []gone
}

type change struct {
	r    *rec
	id   string
	from int
	priv []val // a private change: the fields sent (vUndef: not)
}

type gone struct {
	id string
	h  int
}

func (d *delta) empty() bool { return len(d.appear) == 0 && len(d.change) == 0 && len(d.gone) == 0 }

func (d *delta) reset() {
	d.appear, d.change, d.gone = d.appear[:0], d.change[:0], d.gone[:0]
}

func newEngine(sch *schema, visible bool) *engine {
	return &engine{sch: sch, visible: visible, recs: map[string]*rec{}, tombs: map[string]*tomb{}, viewers: map[string]*viewer{},
		bad: map[string]bool{}, extra: map[string]*typeSpec{}}
}

// typeOf is the fields of type t; a type this code does not declare has
// none (entities older code left).
func (e *engine) typeOf(t string) *typeSpec {
	if t == playerType {
		return e.sch.player
	}
	if ts := e.sch.entities[t]; ts != nil {
		return ts
	}
	ts := e.extra[t]
	if ts == nil {
		ts = &typeSpec{name: t, index: map[string]int{}}
		e.extra[t] = ts
	}
	return ts
}

// join, leave and resume follow a player's viewer.
func (e *engine) join(id string) { e.viewers[id] = &viewer{round: -1, known: map[string]int{}} }

func (e *engine) leave(id string) { delete(e.viewers, id) }

// resume: it starts over; it knows nothing, and nothing it was remembered
// to know across a reload (stale) is told gone to it.
func (e *engine) resume(id string) {
	if v := e.viewers[id]; v != nil {
		v.round, v.known, v.stale = -1, map[string]int{}, nil
	}
}

// source is one of the game's things as the send round reads it: a thing
// (its marks say what changed) or an object the game made itself (read
// whole, by name).
type source struct {
	id     string
	obj    *goja.Object
	t      *thing
	player bool
}

// read is declared field n of ts in s, as sent; ok false when it is not of
// the field's type.
func (s source) read(ts *typeSpec, n int) (val, bool, goja.Value) {
	if s.t != nil && s.t.ts == ts {
		x, ok := s.t.value(n)
		return x, ok, nil
	}
	f := ts.spec(n)
	raw := s.obj.Get(f.name)
	x, ok := toVal(raw, f)
	return x, ok, raw
}

// advance moves the records to a new round from the game's things (players
// then entities) and returns the round's delta in d.
func (e *engine) advance(v *vm, things []source, d *delta) {
	e.round++
	round := e.round
	for _, s := range things {
		r := e.recs[s.id]
		if r == nil {
			e.appear(v, s, round, d)
			continue
		}
		r.seen, r.obj = round, s.obj
		if changed := e.track(v, r, s, round); r.again {
			r.again = false
			d.appear = append(d.appear, r)
		} else if changed {
			d.change = append(d.change, change{r: r, id: r.id, from: round - 1})
		}
	}
	if len(e.recs) > len(things) {
		keep := e.list[:0]
		for _, r := range e.list {
			if r.seen == round {
				keep = append(keep, r)
				continue
			}
			t := &tomb{id: r.id, a: r.first, r: round, h: r.h}
			e.tombs[r.id] = t
			e.tlist = append(e.tlist, t)
			delete(e.recs, r.id)
			d.gone = append(d.gone, gone{r.id, r.h})
		}
		clear(e.list[len(keep):])
		e.list = keep
	}
}

// appear starts the record of a thing seen for the first time.
func (e *engine) appear(v *vm, s source, round int, d *delta) {
	typ := playerType
	if s.t != nil {
		typ = s.t.ts.name
	} else if !s.player {
		if x := s.obj.Get("type"); x != nil && goja.IsString(x) {
			typ = x.String()
		}
	}
	ts := e.typeOf(typ)
	e.nextHandle++
	r := &rec{id: s.id, typ: typ, ts: ts, v: make([]val, len(ts.fields)), fr: make([]int, len(ts.fields)), a: round, seen: round, first: round, h: e.nextHandle, obj: s.obj, src: s.t}
	for n := range ts.fields {
		x, ok, raw := s.read(ts, n)
		if !ok {
			if raw != nil {
				v.badField(ts.name, &ts.fields[n], raw, "")
			}
			x = nullVal
		}
		r.v[n], r.fr[n] = x, round
	}
	if s.t != nil {
		s.t.clean()
	}
	e.recs[s.id] = r
	e.list = append(e.list, r)
	if t := e.tombs[s.id]; t != nil {
		t.dead = true
		delete(e.tombs, s.id)
	}
	d.appear = append(d.appear, r)
}

// track brings r up to date with its thing and reports whether a field
// changed: of a thing that r follows only the marked fields are read.
func (e *engine) track(v *vm, r *rec, s source, round int) bool {
	changed := false
	marked := s.t != nil && s.t == r.src && s.t.ts == r.ts
	if marked && !s.t.dirt && !r.force {
		return false
	}
	for n := range r.ts.fields {
		if marked && !s.t.dirty[n] {
			continue
		}
		x, ok, raw := s.read(r.ts, n)
		if !ok {
			if raw != nil {
				v.badField(r.ts.name, &r.ts.fields[n], raw, "")
			}
			continue
		}
		if x != r.v[n] {
			r.v[n], r.fr[n] = x, round
			changed = true
		}
	}
	if r.force {
		r.force = false
		changed = changed || slices.Contains(r.fr, round)
	}
	if s.t != nil {
		s.t.clean()
	}
	r.src = s.t
	return changed
}

// clean forgets the marks of the fields every viewer sees (private ones
// are compared for each viewer).
func (t *thing) clean() {
	if t.dirt {
		clear(t.dirty)
		t.dirt = false
	}
}

// since is the merged delta, into d, for a viewer that last received
// round vr.
func (e *engine) since(vr int, d *delta) {
	for _, r := range e.list {
		if r.a > vr {
			d.appear = append(d.appear, r)
			continue
		}
		for _, fr := range r.fr {
			if fr > vr {
				d.change = append(d.change, change{r: r, id: r.id, from: vr})
				break
			}
		}
	}
	if vr >= 0 {
		for _, t := range e.tlist {
			if !t.dead && t.a <= vr && t.r > vr {
				d.gone = append(d.gone, gone{t.id, t.h})
			}
		}
	}
}

// private is what viewer vw's own player's private fields changed to since
// it last got them (all of them when fresh), nil when nothing did.
func (e *engine) private(v *vm, vw *viewer, me source, fresh bool) []val {
	ts := e.sch.player
	if vw.pv == nil {
		vw.pv, fresh = make([]val, len(ts.priv)), true
	}
	var out []val
	for n := range ts.priv {
		x, ok, raw := me.read(ts, len(ts.fields)+n)
		if !ok {
			if raw != nil {
				v.badField(playerType, &ts.priv[n], raw, "")
			}
			if x = vw.pv[n]; x.k == vUndef {
				x = nullVal
			}
		}
		if fresh || x != vw.pv[n] {
			vw.pv[n] = x
			if out == nil {
				out = make([]val, len(ts.priv))
			}
			out[n] = x
		}
	}
	return out
}

// prune drops the tombstones no viewer can still need.
func (e *engine) prune() {
	if len(e.tlist) == 0 {
		return
	}
	low := math.MaxInt
	for _, vw := range e.viewers {
		if vw.round >= 0 && vw.round < low {
			low = vw.round
		}
	}
	keep := e.tlist[:0]
	for _, t := range e.tlist {
		if t.dead {
			continue
		}
		if t.r <= low {
			delete(e.tombs, t.id)
			continue
		}
		keep = append(keep, t)
	}
	clear(e.tlist[len(keep):])
	e.tlist = keep
}

func (e *engine) count(d *delta, times int) {
	e.counts[0] += int64(len(d.appear) * times)
	e.counts[1] += int64(len(d.change) * times)
	e.counts[2] += int64(len(d.gone) * times)
}

// takeCounts returns [appeared, changed, gone] since the last call.
func (e *engine) takeCounts() [3]int64 {
	c := e.counts
	e.counts = [3]int64{}
	return c
}

// refit maps the records onto new code's field tables: a field kept keeps
// its value; a field added is sent at the next round; a field whose type
// changed is sent again (null when the thing's value is not of the new
// type), so that no viewer keeps a value of the old type; a thing that
// lost a field appears again, whole, at the next round (an appear replaces
// what a viewer knew of it: nothing else can take a field away). A
// viewer's private fields are all sent again.
func (e *engine) refit(sch *schema, visible bool) {
	e.sch, e.extra, e.bad = sch, map[string]*typeSpec{}, map[string]bool{}
	for _, r := range e.list {
		old := r.ts
		ts := e.typeOf(r.typ)
		v, fr := make([]val, len(ts.fields)), make([]int, len(ts.fields))
		for n, f := range ts.fields {
			k, ok := old.index[f.name]
			switch {
			case !ok || k >= len(old.fields):
				v[n], fr[n] = val{}, r.a // a new field: sent at the next round
			case old.fields[k].typ != f.typ:
				v[n], fr[n], r.force = nullVal, e.round+1, true
			default:
				v[n], fr[n] = r.v[k], r.fr[k]
			}
		}
		if lost(old, ts, r.typ) {
			r.a, r.again = e.round+1, true
		}
		r.ts, r.v, r.fr, r.src = ts, v, fr, nil
	}
	for _, vw := range e.viewers {
		vw.pv = nil
	}
	if visible != e.visible {
		e.visible = visible
		e.switchMode()
	}
}

// lost reports whether a field of old is not in ts (for the player, its
// private ones too).
func lost(old, ts *typeSpec, typ string) bool {
	for _, f := range old.fields {
		if _, ok := ts.index[f.name]; !ok {
			return true
		}
	}
	if typ == playerType {
		for _, f := range old.priv {
			if _, ok := ts.index[f.name]; !ok {
				return true
			}
		}
	}
	return false
}

// switchMode carries what each viewer knows over when a reload adds or
// removes the visibility hook, so nothing is lost either way.
func (e *engine) switchMode() {
	for _, vw := range e.viewers {
		if !e.visible {
			// It sees everything now: it starts over with all of it, and
			// is told at its next update what it knew that no longer
			// exists.
			vw.round, vw.stale, vw.known = -1, vw.known, map[string]int{}
			continue
		}
		// It knows what had appeared by its round, gone things included
		// (they are told gone at its next update).
		known := map[string]int{}
		if vw.round >= 0 {
			for _, r := range e.list {
				if r.first <= vw.round {
					known[r.id] = r.h
				}
			}
			for _, t := range e.tlist {
				if !t.dead && t.a <= vw.round && t.r > vw.round {
					known[t.id] = t.h
				}
			}
		}
		for id, h := range vw.stale { // switched twice before its next update
			known[id] = h
		}
		vw.stale, vw.known = nil, known
	}
}

// clone is a copy of e that shares nothing e changes.
func (e *engine) clone() *engine {
	c := *e
	c.recs, c.list = make(map[string]*rec, len(e.recs)), make([]*rec, 0, len(e.list))
	for _, r := range e.list {
		cr := *r
		cr.v, cr.fr = slices.Clone(r.v), slices.Clone(r.fr)
		c.recs[r.id] = &cr
		c.list = append(c.list, &cr)
	}
	c.tombs, c.tlist = make(map[string]*tomb, len(e.tombs)), make([]*tomb, 0, len(e.tlist))
	for _, t := range e.tlist {
		ct := *t
		if !t.dead {
			c.tombs[t.id] = &ct
		}
		c.tlist = append(c.tlist, &ct)
	}
	c.viewers = make(map[string]*viewer, len(e.viewers))
	for id, vw := range e.viewers {
		cv := *vw
		cv.known, cv.stale, cv.pv = maps.Clone(vw.known), maps.Clone(vw.stale), slices.Clone(vw.pv)
		c.viewers[id] = &cv
	}
	c.bad, c.extra, c.tix = maps.Clone(e.bad), maps.Clone(e.extra), maps.Clone(e.tix)
	return &c
}
