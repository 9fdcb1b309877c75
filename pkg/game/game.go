// Package game holds the rules of a game folder that the generator, the
// runtime and the sync client all apply: the structure rules of a sites tree
// (which names are domains, games, reserved or skipped), hoster-game.json and
// its limits, the field and argument schemas of fields.json and args.json, and
// the validation of a command's arguments.
//
// The argument rule is the one in docs/module-format.md; the generated browser
// library applies the same rule with the same messages.
package game

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// IsDomainName reports whether a directory name at the root of a sites tree
// is a domain: it contains a dot and does not start with "_" or ".".
func IsDomainName(name string) bool {
	return strings.Contains(name, ".") && !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, ".")
}

// IsGameName reports whether a directory name inside a domain may be a game
// (it is one when it also holds hoster-game.json): it does not start with "_"
// or ".".
func IsGameName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, ".")
}

// IsReserved reports whether a name is reserved: it starts with "_", and is
// neither pushed nor pruned by a sync.
func IsReserved(name string) bool { return strings.HasPrefix(name, "_") }

// EnvTypes is the hooks' type file hoster gen writes for editors and tsc:
// it is the developer's alone, neither pushed nor pruned.
const EnvTypes = "hoster-env.d.ts"

// IsSkipped reports whether an entry inside a game is skipped by the walk:
// hidden entries, node_modules and EnvTypes.
func IsSkipped(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == EnvTypes
}

// Limits of hoster-game.json.
const (
	MinTickRate = 1
	MaxTickRate = 120
)

// Config is a game's hoster-game.json.
type Config struct {
	// TickRate is the number of ticks per second, 1 to 120.
	TickRate int `json:"tickRate"`
	// SendRate is the number of update rounds per second, 1 to TickRate.
	SendRate int `json:"sendRate"`
	// Capacity is the most players one instance takes, at least 1.
	Capacity int `json:"capacity"`
	// Origins are the page origins allowed to open the game socket; "*"
	// allows any. Never empty.
	Origins []string `json:"origins"`
	// ResumeGrace is how many seconds the seat of a player whose connection
	// was lost (no close frame) is held for it to come back, 0 to 300;
	// DefaultResumeGrace when absent. 0: every disconnect is a leave.
	ResumeGrace float64 `json:"resumeGrace"`
	// EmptyGrace is how many seconds an instance left with no player lives
	// on, keeping its state for whoever joins next, 0 to 300;
	// DefaultEmptyGrace when absent. 0: it ends as its last player leaves.
	EmptyGrace float64 `json:"emptyGrace"`
	// MaxInstances is the most instances of the game that run at once, at
	// least 1; 0 when absent: the server's default. The server caps it at
	// its own maximum (hoster-server serve --max-instances).
	MaxInstances int `json:"maxInstances"`
	// Memory is the game's memory budget in MiB, at least 16; 0 when
	// absent: the server's default. The server caps it at its own maximum
	// (hoster-server serve --max-memory); it is enforced where each game
	// runs in a worker process of its own (--isolation process).
	Memory int `json:"memory"`
	// Public names the files that went into hoster.server.js which the page
	// needs as well, and so are served (see [Config.MadePublic]); the other
	// files the server module was bundled from are never served. Each entry
	// is a path relative to the game folder, may use the wildcards *, ? and
	// [...] within a name, and may end in "/" for everything below a folder.
	Public []string `json:"public"`
}

// MinMemory is the smallest memory budget a game may ask for, in MiB.
const MinMemory = 16

// DefaultMemory is the memory budget, in MiB, of a game whose
// hoster-game.json sets none, and DefaultMaxMemory the most a game may
// ask for: hoster-server serve's --memory and --max-memory, and what
// hoster dev holds a game to.
const (
	DefaultMemory    = 512
	DefaultMaxMemory = 2048
)

// MemoryBudget is the memory budget in bytes of a game with cfg where the
// default is def MiB and the maximum max MiB.
func MemoryBudget(cfg Config, def, max int) int64 {
	mib := def
	if cfg.Memory > 0 {
		mib = cfg.Memory
	}
	return int64(min(mib, max)) << 20
}

// Limits and default of resumeGrace, in seconds.
const (
	DefaultResumeGrace = 15
	MaxResumeGrace     = 300
)

// Limits and default of emptyGrace, in seconds.
const (
	DefaultEmptyGrace = 10
	MaxEmptyGrace     = 300
)

// ParseConfig decodes and validates hoster-game.json. Every problem is
// reported, joined in one error. Unknown keys are an error, so a misspelt
// setting is not silently ignored.
func ParseConfig(data []byte) (Config, error) {
	c := Config{ResumeGrace: DefaultResumeGrace, EmptyGrace: DefaultEmptyGrace}
	// Keys match exactly: a misspelt or wrongly cased setting is reported
	// with the others, and its value is never read.
	keys, err := decodeExact(data, &c, "setting")
	if err != nil {
		return Config{}, errors.Join(append(keys.problems, err)...)
	}
	// Presence matters: a missing value must be named, not read as 0.
	present := keys.present
	errs := keys.problems
	need := func(key string) bool {
		if !present[key] {
			errs = append(errs, fmt.Errorf("%s is missing", key))
			return false
		}
		return true
	}
	at := func(key string, err error) { errs = append(errs, located(data, key, err)) }
	if need("tickRate") && (c.TickRate < MinTickRate || c.TickRate > MaxTickRate) {
		at("tickRate", fmt.Errorf("tickRate must be from %d to %d, not %d", MinTickRate, MaxTickRate, c.TickRate))
	}
	// Against a missing tickRate (0), every sendRate would be too high.
	if need("sendRate") && (c.SendRate < 1 || c.SendRate > max(c.TickRate, 1) && present["tickRate"]) {
		at("sendRate", fmt.Errorf("sendRate must be from 1 to tickRate (%d), not %d", c.TickRate, c.SendRate))
	}
	if need("capacity") && c.Capacity < 1 {
		at("capacity", fmt.Errorf("capacity must be at least 1, not %d", c.Capacity))
	}
	if c.ResumeGrace < 0 || c.ResumeGrace > MaxResumeGrace {
		at("resumeGrace", fmt.Errorf("resumeGrace must be from 0 to %d seconds, not %v", MaxResumeGrace, c.ResumeGrace))
	}
	if c.EmptyGrace < 0 || c.EmptyGrace > MaxEmptyGrace {
		at("emptyGrace", fmt.Errorf("emptyGrace must be from 0 to %d seconds, not %v", MaxEmptyGrace, c.EmptyGrace))
	}
	if _, ok := present["maxInstances"]; ok && c.MaxInstances < 1 {
		at("maxInstances", fmt.Errorf("maxInstances must be at least 1, not %d", c.MaxInstances))
	}
	if _, ok := present["memory"]; ok && c.Memory < MinMemory {
		at("memory", fmt.Errorf("memory must be at least %d (MiB), not %d", MinMemory, c.Memory))
	}
	if need("origins") {
		if len(c.Origins) == 0 {
			at("origins", errors.New(`origins must not be empty (use ["*"] to allow any)`))
		}
		for _, o := range c.Origins {
			if o == "" || strings.TrimSpace(o) != o {
				at("origins", fmt.Errorf("origins: %q is not an origin", o))
			}
		}
	}
	for _, err := range checkPublic(c.Public) {
		at("public", err)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// AllowsOrigin reports whether a socket request with this Origin header may
// connect: "*" allows any; otherwise the origin must equal one listed,
// compared without regard to case and a trailing slash.
func (c Config) AllowsOrigin(origin string) bool {
	origin = strings.TrimSuffix(origin, "/")
	for _, o := range c.Origins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// FieldType is the type of a field or an argument.
type FieldType string

// The field and argument types.
const (
	Number  FieldType = "number"
	Integer FieldType = "integer"
	String  FieldType = "string"
	Boolean FieldType = "boolean"
)

func (t FieldType) valid() bool {
	switch t {
	case Number, Integer, String, Boolean:
		return true
	}
	return false
}

// Field is the schema of one field of a player or entity.
type Field struct {
	// Type is the field's type: a value of another type is never sent.
	Type FieldType `json:"type"`
	// Private fields of a player are sent only to that player.
	Private bool `json:"private,omitempty"`
	// Interpolate asks the browser library to smooth a number between
	// updates (game.view); it changes nothing on the wire.
	Interpolate bool `json:"interpolate,omitempty"`
	// Precision is a number's step on the wire (0.01: hundredths), 0 for
	// none: the value sent is the nearest multiple, and a change smaller
	// than half a step is not sent at all.
	Precision float64 `json:"precision,omitempty"`
}

// MarshalJSON writes a field as its type name alone when that is all it
// has, the form most fields.json files use.
func (f Field) MarshalJSON() ([]byte, error) {
	if !f.Private && !f.Interpolate && f.Precision == 0 {
		return json.Marshal(f.Type)
	}
	type plain Field
	return json.Marshal(plain(f))
}

// Fields is a fields.json: the fields of a player or entity that viewers see,
// by name. Each is a type name ("number") or an object {type, private,
// interpolate, precision}.
type Fields map[string]Field

// ParseFields decodes and validates a fields.json. With an error, the
// fields that are valid are still returned.
func ParseFields(data []byte) (Fields, error) {
	return parseEach(data, "field", func(name string, raw json.RawMessage) (Field, error) {
		nameErr := checkName(name)
		if nameErr == nil && (name == "id" || name == "type" || name == "connected") {
			nameErr = errors.New("the name is the object's own (id and type are always sent; connected is the runtime's)")
		}
		field, err := parseField(raw)
		return field, errors.Join(append([]error{nameErr}, Split(err)...)...)
	})
}

// parseEach decodes data, a JSON object of noun schemas by name (a
// fields.json, an args.json), and reads each with parse, in name order.
// Every problem is placed at its key and named "<noun> "<name>": ...". The
// values parse accepted are returned, with an error that joins the
// problems.
func parseEach[T any](data []byte, noun string, parse func(name string, raw json.RawMessage) (T, error)) (map[string]T, error) {
	var raw map[string]json.RawMessage
	if err := DecodeExact(data, &raw, noun); err != nil {
		return nil, err
	}
	out := map[string]T{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		v, err := parse(name, raw[name])
		for _, e := range Split(err) {
			errs = append(errs, located(data, name, fmt.Errorf("%s %q: %w", noun, name, e)))
		}
		if err == nil {
			out[name] = v
		}
	}
	return out, errors.Join(errs...)
}

// parseField reads one field's schema: a type name ("number") or an object
// {type, private}.
func parseField(raw json.RawMessage) (Field, error) {
	var field Field
	var short string
	if err := json.Unmarshal(raw, &short); err == nil {
		field.Type = FieldType(short)
	} else if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return Field{}, errors.New(`want a type name ("number") or an object such as {"type": "number", "private": true, "interpolate": true}`)
	} else if err := DecodeExact(raw, &field, ""); err != nil {
		return Field{}, unplaced(err)
	}
	if !field.Type.valid() {
		return Field{}, fmt.Errorf("unknown type %q (want number, integer, string or boolean)", field.Type)
	}
	if field.Interpolate && field.Type != Number && field.Type != Integer {
		return Field{}, fmt.Errorf("interpolate applies only to number and integer, not %s", field.Type)
	}
	if field.Precision != 0 && (field.Type != Number || !(field.Precision > 0) || math.IsInf(field.Precision, 0)) {
		return Field{}, fmt.Errorf("precision %v: want a positive step of a number field", field.Precision)
	}
	return field, nil
}

// Arg is the schema of one command argument.
type Arg struct {
	// Type is the argument's type.
	Type FieldType `json:"type"`
	// Min is the inclusive lower bound of a number or integer, if any.
	Min *float64 `json:"min,omitempty"`
	// Max is the inclusive upper bound of a number or integer, if any.
	Max *float64 `json:"max,omitempty"`
	// MaxLength is the most Unicode code points a string may hold, if any.
	MaxLength *int `json:"maxLength,omitempty"`
}

// Args is an args.json: a command's argument schemas by name. Every argument
// is required.
type Args map[string]Arg

// ParseArgs decodes and validates an args.json. Each value is a type name
// ("number") or an object {type, min, max, maxLength}; the result is always
// the object form.
func ParseArgs(data []byte) (Args, error) {
	args, err := parseEach(data, "argument", func(name string, raw json.RawMessage) (Arg, error) {
		a, err := parseArg(raw)
		if err == nil {
			err = checkName(name)
		}
		return a, err
	})
	if err != nil {
		return nil, err
	}
	return args, nil
}

func parseArg(raw json.RawMessage) (Arg, error) {
	var a Arg
	var short string
	var errs []error
	if err := json.Unmarshal(raw, &short); err == nil {
		a.Type = FieldType(short)
	} else if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return Arg{}, errors.New(`want a type name ("number") or an object such as {"type": "number", "min": 0}`)
	} else if keys, err := decodeExact(raw, &a, ""); err != nil {
		return Arg{}, unplaced(errors.Join(append(keys.problems, err)...))
	} else {
		errs = append(errs, Split(unplaced(errors.Join(keys.problems...)))...)
	}
	if !a.Type.valid() {
		errs = append(errs, fmt.Errorf("unknown type %q (want number, integer, string or boolean)", a.Type))
	}
	numeric := a.Type == Number || a.Type == Integer
	if (a.Min != nil || a.Max != nil) && !numeric && a.Type.valid() {
		errs = append(errs, errors.New("min and max apply only to number and integer"))
	}
	if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
		errs = append(errs, fmt.Errorf("min %v is greater than max %v", *a.Min, *a.Max))
	}
	if a.MaxLength != nil {
		if a.Type != String && a.Type.valid() {
			errs = append(errs, errors.New("maxLength applies only to string"))
		} else if *a.MaxLength < 0 {
			errs = append(errs, fmt.Errorf("maxLength must not be negative, not %d", *a.MaxLength))
		}
	}
	return a, errors.Join(errs...)
}

// Validate checks a command's arguments, as decoded by encoding/json, against
// the schema, by the rule of docs/module-format.md: an object (nil is {}),
// every argument present, none unknown, each of its type and within its
// bounds. The first problem in argument-name order is returned.
func (a Args) Validate(v any) error {
	var obj map[string]any
	switch v := v.(type) {
	case nil:
		obj = map[string]any{}
	case map[string]any:
		obj = v
	default:
		return errors.New("arguments must be an object")
	}
	if a.valid(obj) {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(a)) {
		if _, ok := obj[name]; !ok {
			return fmt.Errorf("missing argument %q", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		if _, ok := a[name]; !ok {
			return fmt.Errorf("unknown argument %q", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a)) {
		if err := a[name].check(name, obj[name]); err != nil {
			return err
		}
	}
	return nil
}

// valid is Validate's answer for arguments that pass, without sorting
// names: every argument present, none unknown, each one right. When it
// says no, Validate finds the first problem in name order.
func (a Args) valid(obj map[string]any) bool {
	if len(obj) != len(a) {
		return false
	}
	for name, s := range a {
		v, ok := obj[name]
		if !ok || s.check(name, v) != nil {
			return false
		}
	}
	return true
}

func (s Arg) check(name string, v any) error {
	switch s.Type {
	case Number, Integer:
		f, ok := v.(float64)
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("argument %q must be a number", name)
		}
		if s.Type == Integer && f != math.Trunc(f) {
			return fmt.Errorf("argument %q must be an integer", name)
		}
		if s.Min != nil && f < *s.Min {
			return fmt.Errorf("argument %q must be at least %v", name, *s.Min)
		}
		if s.Max != nil && f > *s.Max {
			return fmt.Errorf("argument %q must be at most %v", name, *s.Max)
		}
	case String:
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("argument %q must be a string", name)
		}
		if s.MaxLength != nil && utf8.RuneCountInString(str) > *s.MaxLength {
			return fmt.Errorf("argument %q must be at most %d characters", name, *s.MaxLength)
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("argument %q must be a boolean", name)
		}
	}
	return nil
}

// checkName refuses names that cannot travel as JSON keys of a frame or be
// used as a JavaScript property safely.
func checkName(name string) error {
	if name == "" {
		return errors.New("name is empty")
	}
	if name == "__proto__" || name == "constructor" || name == "prototype" {
		return errors.New("name is reserved in JavaScript")
	}
	return nil
}
