package runtime

import (
	"errors"
	"strconv"

	"github.com/dop251/goja"
)

// readyViewer is a viewer whose socket takes an update this round.
type readyViewer struct {
	id      string
	compact bool
}

// update is one viewer's update of a send round: the whole message in the
// JSON protocol, or the compact body, which sendRound frames for the
// viewer's connection.
type update struct {
	viewer  string
	compact bool
	seq     int64
	msg     []byte
}

// roundScratch is what a send round reuses from the last.
type roundScratch struct {
	things []source
	ids    []string
	me     map[string]source
	d, m   delta
	has    []uint8
	json   []byte // the round's shared bodies
	comp   []byte
}

// send runs a send round: the records move to a new round from the game's
// things, and each ready viewer gets its delta. A viewer not ready this
// round keeps what it last received, so its next update merges everything
// it missed. It reads the game's objects and calls its visibility hook:
// the caller runs it guarded.
func (v *vm) send(ready []readyViewer) ([]update, error) {
	e, s := v.eng, &v.scratch
	if err := v.collect(); err != nil {
		return nil, err
	}
	prev := e.round
	s.d.reset()
	e.advance(v, s.things, &s.d)
	var out []update
	var err error
	if e.visible {
		out, err = v.sendVisible(ready)
	} else {
		out = v.sendShared(ready, prev)
	}
	e.prune()
	return out, err
}

// collect lists the game's players and entities, in their objects' order.
func (v *vm) collect() error {
	s := &v.scratch
	s.things = s.things[:0]
	clear(s.me)
	if s.me == nil {
		s.me = map[string]source{}
	}
	inst, ok := v.rt.Get("__inst").(*goja.Object)
	if !ok {
		return errors.New("the instance object is gone")
	}
	v.inst = inst
	for _, player := range []bool{true, false} {
		name := "entities"
		if player {
			name = "players"
		}
		objs, ok := inst.Get(name).(*goja.Object)
		if !ok {
			return errors.New("instance." + name + " is not an object")
		}
		ids := s.ids[:0]
		var ents []mapEntry
		m := thingMapOf(objs)
		if m != nil {
			ids, ents = m.ids, m.entries()
		} else {
			ids = append(ids, objs.Keys()...)
		}
		for i, id := range ids {
			var x goja.Value
			var t *thing
			if m != nil {
				x, t = ents[i].obj, ents[i].t
			} else {
				x = objs.Get(id)
			}
			o, ok := x.(*goja.Object)
			if !ok {
				continue
			}
			if m == nil {
				t = thingOf(o)
			}
			src := source{id: id, obj: o, t: t, player: player}
			s.things = append(s.things, src)
			if player {
				s.me[id] = src
			}
		}
	}
	return nil
}

// header is the start of a JSON update, before its body.
func (v *vm) header(b []byte, seq int64) []byte {
	b = append(b, `{"t":"update","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"time":`...)
	return strconv.AppendInt(b, v.now, 10)
}

// encode is d's body in one encoding (nil when d is empty); JSON bodies
// lack the header.
func (v *vm) encode(b []byte, d *delta, compact bool) []byte {
	if d.empty() {
		return nil
	}
	if compact {
		b = v.eng.appendCompact(b, d, v.scratch.has)
	} else {
		b = v.eng.appendJSON(b, d)
	}
	return b
}

// message is viewer vw's update with body b, in its encoding.
func (v *vm) message(id string, vw *viewer, compact bool, b []byte) update {
	vw.seq++
	if compact {
		return update{viewer: id, compact: true, seq: vw.seq, msg: b}
	}
	msg := v.header(make([]byte, 0, 40+len(b)), vw.seq)
	return update{viewer: id, seq: vw.seq, msg: append(msg, b...)}
}

// sendShared is the round without a visibility hook: a viewer in step
// gets the round's delta, encoded once per encoding; one behind gets what
// changed since its round; a player's own private fields ride with its
// update, which is then its own.
func (v *vm) sendShared(ready []readyViewer, prev int) []update {
	e, s := v.eng, &v.scratch
	var jsonBody, compactBody []byte
	var jsonDone, compactDone bool
	inStep := 0
	out := make([]update, 0, len(ready))
	for _, rv := range ready {
		vw := e.viewers[rv.id]
		me, ok := s.me[rv.id]
		if vw == nil || !ok {
			continue
		}
		var pf []val
		if len(e.sch.player.priv) > 0 {
			pf = e.private(v, vw, me, vw.round < 0)
		}
		var b []byte
		src := &s.d
		if vw.round == prev {
			if rv.compact {
				if !compactDone {
					compactBody, compactDone = v.encode(s.comp[:0], &s.d, true), true
					s.comp = compactBody[:0]
				}
				b = compactBody
			} else {
				if !jsonDone {
					jsonBody, jsonDone = v.encode(s.json[:0], &s.d, false), true
					s.json = jsonBody[:0]
				}
				b = jsonBody
			}
			if b != nil && pf == nil {
				inStep++
			}
		} else {
			s.m.reset()
			e.since(vw.round, &s.m)
			for id, h := range vw.stale {
				if e.recs[id] == nil {
					s.m.gone = append(s.m.gone, gone{id, h})
				}
			}
			vw.stale = nil
			src = &s.m
			b = v.encode(nil, src, rv.compact)
			if b != nil && pf == nil {
				e.count(src, 1)
			}
		}
		if pf != nil {
			own := delta{appear: src.appear, change: append(withRoom(src.change), change{id: rv.id, priv: pf}), gone: src.gone}
			b = v.encode(nil, &own, rv.compact)
			e.count(&own, 1)
		}
		vw.round = e.round
		if b != nil {
			out = append(out, v.message(rv.id, vw, rv.compact, b))
		}
	}
	if inStep > 0 {
		e.count(&s.d, inStep)
	}
	return out
}

// withRoom is a copy of cs with room for one more.
func withRoom(cs []change) []change {
	return append(make([]change, 0, len(cs)+1), cs...)
}

// sendVisible is the round with a visibility hook: every viewer gets its
// own delta, what it sees now against the things it knows and its round.
func (v *vm) sendVisible(ready []readyViewer) ([]update, error) {
	e, s := v.eng, &v.scratch
	reported := false
	out := make([]update, 0, len(ready))
	sr := seeRound{pure: v.pureNow(), seen: make([]byte, len(e.list))}
	seen := sr.seen
	for _, rv := range ready {
		vw := e.viewers[rv.id]
		me, ok := s.me[rv.id]
		if vw == nil || !ok {
			continue
		}
		res, err := v.see(&sr, me)
		if err != nil {
			return nil, err
		}
		// A hook that throws hides the thing, which is safe; it is reported
		// once a round and does not count towards closing an instance
		// whose ticks keep throwing.
		if res != nil && goja.IsString(res) && !reported {
			reported = true
			v.herrs = append(v.herrs, hookErr{where: "visible", text: res.String()})
		}
		d := &s.m
		d.reset()
		hits, vr := 0, vw.round
		for k, r := range e.list {
			sees := seen[k] != 0
			h, knows := vw.known[r.id]
			if !sees {
				if knows {
					d.gone = append(d.gone, gone{r.id, h})
					delete(vw.known, r.id)
				}
				continue
			}
			hits++
			if !knows || r.a > vr { // new to it, or appearing again after a reload
				d.appear = append(d.appear, r)
				vw.known[r.id] = r.h
				continue
			}
			for _, fr := range r.fr {
				if fr > vr {
					d.change = append(d.change, change{r: r, id: r.id, from: vr})
					break
				}
			}
		}
		if len(vw.known) > hits { // some thing it knew went
			for id, h := range vw.known {
				if e.recs[id] == nil {
					d.gone = append(d.gone, gone{id, h})
					delete(vw.known, id)
				}
			}
		}
		if len(e.sch.player.priv) > 0 {
			if pf := e.private(v, vw, me, vr < 0); pf != nil {
				d.change = append(d.change, change{id: rv.id, priv: pf})
			}
		}
		vw.round = e.round
		if b := v.encode(nil, d, rv.compact); b != nil {
			e.count(d, 1)
			out = append(out, v.message(rv.id, vw, rv.compact, b))
		}
	}
	return out, nil
}

// seeRound is what the viewers of one send round share in asking the
// visibility hook: its answers for the viewer asked last (1: it sees the
// thing of e.list), whether Go still evaluates a pure hook, and the
// things as a JavaScript array once it no longer does.
type seeRound struct {
	seen   []byte
	pure   bool
	things *goja.Object
}

// see asks the visibility hook about every thing for viewer me, into
// sr.seen: Go evaluates a pure hook while it can; from the first answer it
// cannot tell on, the rest of the round is JavaScript's, which calls the
// hook in the same order (__sees). It returns the text of the first error
// the hook threw, if any.
func (v *vm) see(sr *seeRound, me source) (goja.Value, error) {
	list, from := v.eng.list, 0
	if sr.pure {
		for k, r := range list {
			sees, ok := false, false
			if me.t != nil && r.src != nil {
				sees, ok = v.pure.sees(me.t, r.src)
			}
			if !ok {
				sr.pure, from = false, k
				break
			}
			sr.seen[k] = 0
			if sees {
				sr.seen[k] = 1
			}
		}
		if sr.pure {
			return nil, nil
		}
	}
	if sr.things == nil {
		objs := make([]any, len(list))
		for k, r := range list {
			objs[k] = r.obj
		}
		sr.things = v.rt.NewArray(objs...)
	}
	things := sr.things
	if from > 0 {
		objs := make([]any, len(list)-from)
		for k, r := range list[from:] {
			objs[k] = r.obj
		}
		things = v.rt.NewArray(objs...)
	}
	seenV := v.rt.ToValue(v.rt.NewArrayBuffer(sr.seen[from:]))
	return v.seesAll(goja.Undefined(), v.visibleV, v.inst, me.obj, things, seenV)
}

// viewOf is what viewer pid knows, as JSON: the things it was told of (with
// a visibility hook, those it knows; without, all that had appeared by the
// round it last received) with their values of the last send round, and
// its own private fields as last sent; null when it has no viewer.
func (v *vm) viewOf(pid string) []byte {
	e := v.eng
	vw := e.viewers[pid]
	if vw == nil {
		return []byte("null")
	}
	behind := e.round - vw.round
	if vw.round < 0 {
		behind = e.round
	}
	b := []byte(`{"round":`)
	b = strconv.AppendInt(b, int64(vw.round), 10)
	b = append(b, `,"behind":`...)
	b = strconv.AppendInt(b, int64(behind), 10)
	b = append(b, `,"things":{`...)
	first := true
	for _, r := range e.list {
		if e.visible {
			if _, ok := vw.known[r.id]; !ok {
				continue
			}
		} else if vw.round < 0 || r.first > vw.round {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, r.id)
		b = append(b, `:{"type":`...)
		b = appendJSONString(b, r.typ)
		b = append(b, `,"f":`...)
		b = appendJSONFields(b, r.ts.fields, r.v, nil, -1)
		b = append(b, '}')
	}
	b = append(b, `},"private":`...)
	if vw.pv == nil {
		b = append(b, "null"...)
	} else {
		pv := make([]val, len(vw.pv))
		for n, x := range vw.pv {
			if pv[n] = x; x.k == vUndef {
				pv[n] = nullVal
			}
		}
		b = appendJSONFields(b, e.sch.player.priv, pv, nil, -1)
	}
	return append(b, '}')
}
