package game

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// DecodeExact is how every JSON object a user writes is read
// (hoster-game.json, fields.json, args.json, the client's hoster.json): it
// decodes data, one JSON object, into v, a pointer to a struct whose fields
// carry json tags or to a map, with keys matched exactly. encoding/json alone
// matches keys without regard to case, so "tickrate" would set tickRate;
// here a key that is not exactly one of the struct's is unknown, named with
// the spelling it likely means ("did you mean"), and its value is never
// decoded. A key written twice is a problem too, for a struct or a map.
// noun names the keys in messages ("setting"; "" for "key").
//
// Every problem is returned, joined; each is a [*PosError] placed at its key
// or value.
func DecodeExact(data []byte, v any, noun string) error {
	k, err := decodeExact(data, v, noun)
	return errors.Join(append(k.problems, err)...)
}

// exactKeys is what decodeExact found among an object's keys.
type exactKeys struct {
	// present holds the keys decoded (known and written once).
	present map[string]bool
	// problems are the keys that are unknown or repeated, placed.
	problems []error
}

// decodeExact is DecodeExact with the key problems kept apart from the
// error of decoding the rest, for a parser that validates what decoded.
func decodeExact(data []byte, v any, noun string) (exactKeys, error) {
	var known []string // nil: any key (a map)
	if t := reflect.TypeOf(v); t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		known = jsonNames(t.Elem())
	}
	what := noun
	if what == "" {
		what = "key"
	}
	k := exactKeys{present: map[string]bool{}}
	masked := data
	for _, key := range objectKeys(data) {
		var msg string
		switch {
		case known != nil && !slices.Contains(known, key.name):
			msg = fmt.Sprintf("unknown %s %q", what, key.name)
			if n := Nearest(key.name, known); n != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", n)
			}
		case k.present[key.name]:
			msg = fmt.Sprintf("%s %q is written twice (one value only)", what, key.name)
		default:
			k.present[key.name] = true
			continue
		}
		line, col := position(data, key.start)
		k.problems = append(k.problems, &PosError{Line: line, Col: col, Msg: msg})
		// The decoder must not see this key: blanked, it names nothing.
		if &masked[0] == &data[0] {
			masked = bytes.Clone(data)
		}
		for i := key.start + 1; i < key.end-1; i++ {
			masked[i] = ' '
		}
	}
	return k, decodeMasked(data, masked, v, noun)
}

// jsonNames lists the keys encoding/json uses for struct t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// objectKey is one key of a JSON object as written.
type objectKey struct {
	name string
	// data[start:end] is the key with its quotes.
	start, end int
}

// objectKeys lists the keys of data's top-level object in the order they
// are written, repeats included, as far as data is valid JSON; nil when
// data is not an object.
func objectKeys(data []byte) []objectKey {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []objectKey
	for dec.More() {
		// After the previous value (or the brace), the key starts at the
		// first quote, and the decoder stops just past its last.
		from := int(dec.InputOffset())
		t, err := dec.Token()
		name, ok := t.(string)
		if err != nil || !ok {
			return keys
		}
		if i := bytes.IndexByte(data[from:], '"'); i >= 0 {
			keys = append(keys, objectKey{name: name, start: from + i, end: int(dec.InputOffset())})
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}
