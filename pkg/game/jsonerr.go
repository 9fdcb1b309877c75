package game

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// A PosError is one problem in a definition file (hoster-game.json,
// fields.json, args.json), at its place in the file when it has one. Its
// message reads in the game's terms: what was found and what is allowed,
// never a Go type.
type PosError struct {
	// Line and Col are 1-based (Col counts characters); both are 0 when
	// the problem has no single place, such as a missing setting.
	Line, Col int
	// Msg says what is wrong.
	Msg string
}

func (e *PosError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// position turns a byte offset into data into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// keyOffsets returns the offset of each key of data's top-level object,
// where its opening quote stands (the last, for a key written twice); nil
// when data is not an object.
func keyOffsets(data []byte) map[string]int {
	keys := objectKeys(data)
	if keys == nil {
		return nil
	}
	offsets := map[string]int{}
	for _, k := range keys {
		offsets[k.name] = k.start
	}
	return offsets
}

// located places err at key's position in data's top-level object, keeping
// a position err already has. An error joined from several is placed part
// by part.
func located(data []byte, key string, err error) error {
	var pe *PosError
	if errors.As(err, &pe) && pe.Line > 0 {
		return err
	}
	off, ok := keyOffsets(data)[key]
	if !ok {
		return err
	}
	line, col := position(data, off)
	return &PosError{Line: line, Col: col, Msg: err.Error()}
}

// Split returns the problems joined in an error of this package's parsers
// (errors.Join), or err alone; nil for nil.
func Split(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// decodeMasked decodes masked, a copy of data with some keys blanked, and
// places its errors in data.
func decodeMasked(data, masked []byte, v any, noun string) error {
	dec := json.NewDecoder(bytes.NewReader(masked))
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			line, col := position(data, nextNonSpace(data, int(dec.InputOffset())))
			return &PosError{Line: line, Col: col, Msg: "JSON syntax: more after the end of the value (one object per file)"}
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// Offset counts the byte that could not be read.
		at := int(syn.Offset) - 1
		line, col := position(data, at)
		msg := "JSON syntax: " + syn.Error()
		if at >= 0 && at < len(data) && (data[at] == '}' || data[at] == ']') &&
			bytes.HasSuffix(bytes.TrimRight(data[:at], " \t\r\n"), []byte(",")) {
			msg = fmt.Sprintf("JSON syntax: a comma before %q (JSON allows no trailing comma)", data[at])
		}
		return &PosError{Line: line, Col: col, Msg: msg}
	case errors.Is(err, io.EOF) && len(bytes.TrimSpace(data)) == 0:
		return &PosError{Msg: "the file is empty (it needs one JSON object)"}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		line, col := position(data, len(bytes.TrimRight(data, " \t\r\n")))
		return &PosError{Line: line, Col: col, Msg: "JSON syntax: the file ends before the JSON value does (a missing } or ]?)"}
	case errors.As(err, &typ):
		off := valueStart(data, int(typ.Offset), typ.Value)
		line, col := position(data, off)
		return &PosError{Line: line, Col: col, Msg: whose(data, off, noun, typ.Field) +
			fmt.Sprintf("found %s, want %s", describeJSON(typ.Value), describeType(typ.Type))}
	}
	return &PosError{Msg: "reading JSON: " + err.Error()}
}

// whose prefixes a message with the top-level key that holds offset off
// (`field "x": `) and the key inside it, if any.
func whose(data []byte, off int, noun, inner string) string {
	var top string
	best := -1
	for k, o := range keyOffsets(data) {
		if o <= off && o > best {
			top, best = k, o
		}
	}
	var b strings.Builder
	named := best >= 0 && noun != ""
	if named {
		fmt.Fprintf(&b, "%s %q: ", noun, top)
	}
	if inner != "" && !(named && inner == top) {
		fmt.Fprintf(&b, "%q: ", inner)
	}
	return b.String()
}

// valueStart finds where the JSON value that a type error names begins: the
// decoder's offset stands just past an object's or list's opening bracket,
// or at the end of a literal.
func valueStart(data []byte, off int, value string) int {
	off = min(off, len(data))
	if value == "object" || value == "array" {
		return max(0, off-1)
	}
	i := off - 1
	if i >= 0 && i < len(data) && data[i] == '"' {
		for i--; i > 0 && !(data[i] == '"' && data[i-1] != '\\'); i-- {
		}
		return max(0, i)
	}
	for i > 0 && strings.IndexByte("0123456789+-.eEtruefalsn", data[i-1]) >= 0 {
		i--
	}
	return max(0, i)
}

func nextNonSpace(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
		off++
	}
	return off
}

// describeJSON names a kind of JSON value as encoding/json reports it.
func describeJSON(value string) string {
	switch {
	case value == "object":
		return "an object"
	case value == "array":
		return "a list"
	case value == "string":
		return "a string"
	case value == "bool":
		return "true or false"
	case strings.HasPrefix(value, "number"):
		if n := strings.TrimSpace(strings.TrimPrefix(value, "number")); n != "" {
			return "the number " + n
		}
		return "a number"
	}
	return value
}

// describeType names what a Go destination accepts, in JSON's terms.
func describeType(t reflect.Type) string {
	if t == reflect.TypeFor[FieldType]() {
		return "a type name (number, integer, string or boolean)"
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return "another kind of value"
}

// Nearest returns the candidate closest to name by edit distance, if one is
// close enough to be a likely misspelling ("joined" for "join"), else "".
func Nearest(name string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// unplaced drops the places of the problems in err, one value's inside a
// file: the caller places them at the value's key.
func unplaced(err error) error {
	var out []error
	for _, e := range Split(err) {
		var pe *PosError
		if errors.As(e, &pe) {
			e = errors.New(pe.Msg)
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}
