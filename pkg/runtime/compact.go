package runtime

import (
	"encoding/json"
	"slices"

	"github.com/hoster-dev/hoster/pkg/compact"
)

// tables are the compact encoding's field tables of the code the instance
// runs (sent in the welcome, and in a "types" message after a reload): the
// player first with its private fields; entity types sorted, then those of
// things older code left that this code no longer declares (no fields).
// The types are numbered by their place, which the engine remembers.
func (e *engine) tables() json.RawMessage {
	table := func(fs []fieldSpec) []compact.Field {
		out := make([]compact.Field, 0, len(fs))
		for _, f := range fs {
			out = append(out, compact.Field{Name: f.name, Type: string(f.typ), Q: f.q})
		}
		return out
	}
	types := []compact.Type{{Type: playerType, Fields: table(e.sch.player.fields), Private: table(e.sch.player.priv)}}
	for _, t := range e.sch.names {
		types = append(types, compact.Type{Type: t, Fields: table(e.sch.entities[t].fields)})
	}
	for _, t := range slices.Sorted(func(yield func(string) bool) {
		for t := range e.extra {
			if !yield(t) {
				return
			}
		}
	}) {
		types = append(types, compact.Type{Type: t, Fields: []compact.Field{}})
	}
	e.tix = map[string]int{}
	for n, t := range types {
		e.tix[t.Type] = n
	}
	b, _ := json.Marshal(types)
	return b
}

// frameCompact is a compact update for one viewer: the header (its seq, and
// the time against its connection's previous update) and the body.
func frameCompact(seq int64, body []byte, now, prevTime int64) []byte {
	return append(compact.AppendHeader(make([]byte, 0, 12+len(body)), uint64(seq), now, prevTime), body...)
}
