package game

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestStructureRules(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		domain, game, reserved, skipped bool
	}{
		{"example.com", true, true, false, false},
		{"localhost", false, true, false, false},
		{"_drafts.com", false, false, true, false},
		{".hidden.com", false, false, false, true},
		{"node_modules", false, true, false, true},
		{"hoster-env.d.ts", true, true, false, true},
		{"arena", false, true, false, false},
		{"", false, false, false, false},
	} {
		if got := IsDomainName(tc.name); got != tc.domain {
			t.Errorf("IsDomainName(%q) = %v", tc.name, got)
		}
		if got := IsGameName(tc.name); got != tc.game {
			t.Errorf("IsGameName(%q) = %v", tc.name, got)
		}
		if got := IsReserved(tc.name); got != tc.reserved {
			t.Errorf("IsReserved(%q) = %v", tc.name, got)
		}
		if got := IsSkipped(tc.name); got != tc.skipped {
			t.Errorf("IsSkipped(%q) = %v", tc.name, got)
		}
	}
}

func TestParseConfig(t *testing.T) {
	good := `{"tickRate": 20, "sendRate": 10, "capacity": 16, "origins": ["https://example.com"]}`
	c, err := ParseConfig([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.TickRate != 20 || c.SendRate != 10 || c.Capacity != 16 || len(c.Origins) != 1 || c.ResumeGrace != DefaultResumeGrace {
		t.Fatalf("parsed %+v", c)
	}
	for _, grace := range []float64{0, 2.5, 300} {
		in := fmt.Sprintf(`{"tickRate": 20, "sendRate": 10, "capacity": 16, "origins": ["*"], "resumeGrace": %v}`, grace)
		if c, err := ParseConfig([]byte(in)); err != nil || c.ResumeGrace != grace {
			t.Errorf("resumeGrace %v: %+v %v", grace, c, err)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{}`, "tickRate is missing"},
		{`{}`, "origins is missing"},
		{`{"tickRate": 0, "sendRate": 1, "capacity": 1, "origins": ["*"]}`, "tickRate must be from 1 to 120, not 0"},
		{`{"tickRate": 121, "sendRate": 1, "capacity": 1, "origins": ["*"]}`, "tickRate must be from 1 to 120"},
		{`{"tickRate": 20, "sendRate": 30, "capacity": 1, "origins": ["*"]}`, "sendRate must be from 1 to tickRate (20), not 30"},
		{`{"tickRate": 20, "sendRate": 0, "capacity": 1, "origins": ["*"]}`, "sendRate must be"},
		{`{"tickRate": 20, "sendRate": 10, "capacity": 0, "origins": ["*"]}`, "capacity must be at least 1"},
		{`{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": []}`, "origins must not be empty"},
		{`{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": [""]}`, "is not an origin"},
		{`{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": ["*"], "tickrate": 5}`, `unknown setting "tickrate" (did you mean "tickRate"?)`},
		{`{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": ["*"], "resumeGrace": 301}`, "resumeGrace must be from 0 to 300 seconds, not 301"},
		{`{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": ["*"], "resumeGrace": -1}`, "resumeGrace must be from 0 to 300"},
		{`{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": ["*"], "resumeGrace": "15"}`, `setting "resumeGrace": found a string, want a number`},
		{`{"tickRate": 2.5}`, `line 1, column 14: setting "tickRate": found the number 2.5, want a whole number`},
		{`[1]`, "line 1, column 1: found a list, want an object"},
		{`{"tickRate": 20} {}`, "line 1, column 18: JSON syntax: more after the end of the value"},
		{``, "the file is empty"},
	} {
		_, err := ParseConfig([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%s) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
	// Every problem at once.
	_, err = ParseConfig([]byte(`{"tickRate": 0, "sendRate": 0, "capacity": 0, "origins": []}`))
	if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
		t.Errorf("want 4 problems, got %d: %v", n, err)
	}
}

func TestAllowsOrigin(t *testing.T) {
	c := Config{Origins: []string{"https://Example.com/"}}
	for origin, want := range map[string]bool{
		"https://example.com":      true,
		"https://example.com/":     true,
		"http://example.com":       false,
		"https://example.com.evil": false,
		"":                         false,
	} {
		if got := c.AllowsOrigin(origin); got != want {
			t.Errorf("AllowsOrigin(%q) = %v", origin, got)
		}
	}
	if !(Config{Origins: []string{"*"}}).AllowsOrigin("https://any.where") {
		t.Error(`"*" must allow any origin`)
	}
}

func TestParseFields(t *testing.T) {
	f, err := ParseFields([]byte(`{"x": "number", "name": "string", "n": "integer", "ok": "boolean", "ammo": {"type": "integer", "private": true}}`))
	if err != nil || len(f) != 5 || f["n"] != (Field{Type: Integer}) || f["ammo"] != (Field{Type: Integer, Private: true}) {
		t.Fatalf("ParseFields = %v, %v", f, err)
	}
	// Written back, a plain field is its type name.
	if b, _ := json.Marshal(f); string(b) != `{"ammo":{"type":"integer","private":true},"n":"integer","name":"string","ok":"boolean","x":"number"}` {
		t.Errorf("marshalled as %s", b)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"x": "float"}`, `field "x": unknown type "float"`},
		{`{"id": "string"}`, `field "id"`},
		{`{"__proto__": "string"}`, "reserved in JavaScript"},
		{`{"x": 5}`, `line 1, column 2: field "x": want a type name ("number") or an object such as {"type": "number", "private": true, "interpolate": true}`},
		{`{"x": {"type": "number", "secret": true}}`, `line 1, column 2: field "x": unknown key "secret"`},
		{`{"x": {"private": true}}`, `field "x": unknown type ""`},
		{`{"connected": "boolean"}`, `field "connected"`},
		{`{"n": {"type": "integer", "precision": 0.5}}`, `field "n": precision 0.5: want a positive step of a number field`},
		{`{"x": {"type": "number", "precision": -0.01}}`, `field "x": precision -0.01`},
		{`{"x": {"type": "number", "precision": "0.01"}}`, `field "x"`},
		{`{"name": {"type": "string", "interpolate": true}}`, `line 1, column 2: field "name": interpolate applies only to number and integer, not string`},
		{`nope`, "line 1, column 2: JSON syntax: invalid character 'o'"},
	} {
		_, err := ParseFields([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFields(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A precision is kept, and written back in the object form.
func TestParseFieldsPrecision(t *testing.T) {
	f, err := ParseFields([]byte(`{"x": {"type": "number", "precision": 0.01}, "y": "number"}`))
	if err != nil || f["x"] != (Field{Type: Number, Precision: 0.01}) || f["y"] != (Field{Type: Number}) {
		t.Fatalf("ParseFields = %v, %v", f, err)
	}
	if b, _ := json.Marshal(f); string(b) != `{"x":{"type":"number","precision":0.01},"y":"number"}` {
		t.Errorf("marshalled as %s", b)
	}
}

func TestParseArgs(t *testing.T) {
	a, err := ParseArgs([]byte(`{"dx": {"type": "number", "min": -1, "max": 1}, "name": {"type": "string", "maxLength": 3}, "go": "boolean"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a["go"].Type != Boolean || *a["dx"].Max != 1 || *a["name"].MaxLength != 3 {
		t.Fatalf("ParseArgs = %+v", a)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"dx": "float"}`, `argument "dx": unknown type "float"`},
		{`{"dx": {"type": "string", "min": 1}}`, "min and max apply only to number"},
		{`{"dx": {"type": "number", "min": 2, "max": 1}}`, "min 2 is greater than max 1"},
		{`{"dx": {"type": "number", "maxLength": 1}}`, "maxLength applies only to string"},
		{`{"dx": {"type": "string", "maxLength": -1}}`, "must not be negative"},
		{`{"dx": {"type": "number", "step": 1}}`, `line 1, column 2: argument "dx": unknown key "step"`},
		{`{"dx": {"type": "number", "MAX": 1}}`, `unknown key "MAX"`},
		{`{"dx": 5}`, `line 1, column 2: argument "dx": want a type name ("number") or an object`},
		{`{"dx": {"type": "number", "min": "zero"}}`, `argument "dx": "min": found a string, want a number`},
	} {
		_, err := ParseArgs([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseArgs(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	args, err := ParseArgs([]byte(`{
		"dx": {"type": "number", "min": -1, "max": 1},
		"n": {"type": "integer", "min": 0},
		"name": {"type": "string", "maxLength": 3},
		"on": "boolean"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"dx": 0.5, "n": 3, "name": "héé", "on": true}`, ""},
		{`{"dx": -1, "n": 0, "name": "", "on": false}`, ""},
		{`[]`, "arguments must be an object"},
		{`"x"`, "arguments must be an object"},
		{`{"n": 3, "name": "a", "on": true}`, `missing argument "dx"`},
		{`null`, `missing argument "dx"`},
		{`{"dx": 0, "n": 3, "name": "a", "on": true, "dz": 1}`, `unknown argument "dz"`},
		{`{"dx": "0", "n": 3, "name": "a", "on": true}`, `argument "dx" must be a number`},
		{`{"dx": 1.5, "n": 3, "name": "a", "on": true}`, `argument "dx" must be at most 1`},
		{`{"dx": -2, "n": 3, "name": "a", "on": true}`, `argument "dx" must be at least -1`},
		{`{"dx": 0, "n": 3.5, "name": "a", "on": true}`, `argument "n" must be an integer`},
		{`{"dx": 0, "n": -1, "name": "a", "on": true}`, `argument "n" must be at least 0`},
		{`{"dx": 0, "n": 1, "name": "abcd", "on": true}`, `argument "name" must be at most 3 characters`},
		{`{"dx": 0, "n": 1, "name": 5, "on": true}`, `argument "name" must be a string`},
		{`{"dx": 0, "n": 1, "name": "a", "on": 1}`, `argument "on" must be a boolean`},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
			t.Fatal(err)
		}
		err := args.Validate(v)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Validate(%s) = %v, want nil", tc.in, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("Validate(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if err := (Args{}).Validate(nil); err != nil {
		t.Errorf("a command without arguments accepts an absent a: %v", err)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"tickRate": 20, "sendRate": 10, "capacity": 16, "origins": ["*"]}`))
	f.Add([]byte(`{"tickRate": 0}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if c.TickRate < MinTickRate || c.TickRate > MaxTickRate || c.SendRate < 1 || c.SendRate > c.TickRate || c.Capacity < 1 || len(c.Origins) == 0 {
			t.Fatalf("accepted an invalid config %+v from %q", c, data)
		}
	})
}

func FuzzValidate(f *testing.F) {
	args, _ := ParseArgs([]byte(`{"dx": {"type": "number", "min": -1, "max": 1}, "name": {"type": "string", "maxLength": 3}}`))
	f.Add([]byte(`{"dx": 0, "name": "ab"}`))
	f.Add([]byte(`{"dx": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		if args.Validate(v) == nil {
			m := v.(map[string]any)
			dx := m["dx"].(float64)
			if dx < -1 || dx > 1 || len([]rune(m["name"].(string))) > 3 || len(m) != 2 {
				t.Fatalf("accepted %s", data)
			}
		}
	})
}

// TestErrorsPointAtTheirPlace checks that problems in a multi-line file carry
// the line and column a game author would look at.
func TestErrorsPointAtTheirPlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func([]byte) error
		in    string
		want  string
	}{
		{"syntax", func(b []byte) error { _, err := ParseFields(b); return err },
			"{\n  \"x\": \"number\",\n  \"y\": \"number\",\n}\n",
			"line 4, column 1: JSON syntax: a comma before '}' (JSON allows no trailing comma)"},
		{"syntax", func(b []byte) error { _, err := ParseFields(b); return err },
			"{\n  \"x\": \"number\"\n  \"y\": \"number\"\n}\n",
			"line 3, column 3: JSON syntax: invalid character '\"' after object key:value pair"},
		{"unfinished", func(b []byte) error { _, err := ParseFields(b); return err },
			"{\n  \"x\": \"number\"\n",
			"line 2, column 16: JSON syntax: the file ends before the JSON value does (a missing } or ]?)"},
		{"semantic", func(b []byte) error { _, err := ParseConfig(b); return err },
			"{\n  \"tickRate\": 20,\n  \"sendRate\": 10,\n  \"capacity\": 0,\n  \"origins\": [\"*\"]\n}\n",
			"line 4, column 3: capacity must be at least 1, not 0"},
		{"type", func(b []byte) error { _, err := ParseArgs(b); return err },
			"{\n  \"dx\": {\"type\": \"number\",\n         \"max\": true}\n}",
			`line 2, column 3: argument "dx": "max": found true or false, want a number`},
		{"unknown key", func(b []byte) error { _, err := ParseConfig(b); return err },
			"{\"tickRate\": 20, \"sendRate\": 10, \"capacity\": 1, \"origins\": [\"*\"],\n \"resumeGrase\": 5}",
			`line 2, column 2: unknown setting "resumeGrase" (did you mean "resumeGrace"?)`},
		{"no go types", func(b []byte) error { _, err := ParseFields(b); return err },
			`{"a": "number", "b": ["number"]}`,
			`line 1, column 17: field "b": want a type name ("number") or an object such as {"type": "number", "private": true, "interpolate": true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse([]byte(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "game.") {
				t.Errorf("the message names Go: %v", err)
			}
		})
	}
}

// TestEmptyGrace: emptyGrace is a setting in seconds, 10 by default, from 0
// to 300, checked like the others.
func TestEmptyGrace(t *testing.T) {
	base := `{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": ["*"]%s}`
	if c, err := ParseConfig([]byte(fmt.Sprintf(base, ""))); err != nil || c.EmptyGrace != DefaultEmptyGrace || DefaultEmptyGrace != 10 {
		t.Fatalf("without emptyGrace: %+v %v, want %d", c, err, 10)
	}
	for _, grace := range []float64{0, 0.5, 300} {
		if c, err := ParseConfig([]byte(fmt.Sprintf(base, fmt.Sprintf(`, "emptyGrace": %v`, grace)))); err != nil || c.EmptyGrace != grace {
			t.Errorf("emptyGrace %v: %+v %v", grace, c, err)
		}
	}
	for in, want := range map[string]string{
		`, "emptyGrace": 301`:  "line 1, column 67: emptyGrace must be from 0 to 300 seconds, not 301",
		`, "emptyGrace": -1`:   "line 1, column 67: emptyGrace must be from 0 to 300 seconds, not -1",
		`, "emptyGrace": "10"`: `line 1, column 81: setting "emptyGrace": found a string, want a number`,
		`, "emptyGrase": 10`:   `line 1, column 67: unknown setting "emptyGrase" (did you mean "emptyGrace"?)`,
		`, "emptygrace": 10`:   `unknown setting "emptygrace" (did you mean "emptyGrace"?)`,
	} {
		_, err := ParseConfig([]byte(fmt.Sprintf(base, in)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(...%s) = %v, want %q", in, err, want)
		}
	}
}

func TestNearest(t *testing.T) {
	hooks := []string{"join", "leave", "visible", "disconnect", "reconnect"}
	for _, tc := range []struct{ in, want string }{
		{"joined", "join"}, {"leav", "leave"}, {"Visible", "visible"}, {"reconect", "reconnect"},
		{"score", ""}, {"tick", ""},
	} {
		if got := Nearest(tc.in, hooks); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMaxInstances: maxInstances is an optional whole number, at least 1;
// absent, it is 0 (the server's default).
func TestMaxInstances(t *testing.T) {
	base := `{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": ["*"]%s}`
	if c, err := ParseConfig([]byte(fmt.Sprintf(base, ""))); err != nil || c.MaxInstances != 0 {
		t.Fatalf("without maxInstances: %+v %v, want 0", c, err)
	}
	for _, n := range []int{1, 20, 100000} {
		if c, err := ParseConfig([]byte(fmt.Sprintf(base, fmt.Sprintf(`, "maxInstances": %d`, n)))); err != nil || c.MaxInstances != n {
			t.Errorf("maxInstances %d: %+v %v", n, c, err)
		}
	}
	for in, want := range map[string]string{
		`, "maxInstances": 0`:   "line 1, column 67: maxInstances must be at least 1, not 0",
		`, "maxInstances": -3`:  "line 1, column 67: maxInstances must be at least 1, not -3",
		`, "maxInstances": 2.5`: `line 1, column 83: setting "maxInstances": found the number 2.5, want a whole number`,
		`, "maxInstances": "5"`: `line 1, column 83: setting "maxInstances": found a string, want a whole number`,
		`, "maxInstance": 5`:    `line 1, column 67: unknown setting "maxInstance" (did you mean "maxInstances"?)`,
		`, "maxinstances": 5`:   `unknown setting "maxinstances" (did you mean "maxInstances"?)`,
	} {
		_, err := ParseConfig([]byte(fmt.Sprintf(base, in)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(...%s) = %v, want %q", in, err, want)
		}
	}
}

// TestKeysMatchExactly: in every file a user writes, a key matches only as
// spelt: a wrongly cased one is an unknown key that names the right
// spelling, and its value is never used (encoding/json alone would take it).
func TestKeysMatchExactly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func([]byte) error
		in    string
		want  string // the whole error
	}{
		{"setting", func(b []byte) error { _, err := ParseConfig(b); return err },
			`{"tickRate": 10, "sendRate": 10, "capacity": 1, "origins": ["*"], "tickrate": 500}`,
			`line 1, column 67: unknown setting "tickrate" (did you mean "tickRate"?)`},
		{"setting alone", func(b []byte) error { _, err := ParseConfig(b); return err },
			`{"tickrate": 10, "sendRate": 10, "capacity": 1, "origins": ["*"]}`,
			"line 1, column 2: unknown setting \"tickrate\" (did you mean \"tickRate\"?)\ntickRate is missing"},
		{"setting twice", func(b []byte) error { _, err := ParseConfig(b); return err },
			`{"tickRate": 10, "sendRate": 10, "capacity": 1, "origins": ["*"], "tickRate": 500}`,
			`line 1, column 67: setting "tickRate" is written twice (one value only)`},
		{"field", func(b []byte) error { _, err := ParseFields(b); return err },
			`{"x": {"Type": "number"}}`,
			"line 1, column 2: field \"x\": unknown key \"Type\" (did you mean \"type\"?)"},
		{"field key", func(b []byte) error { _, err := ParseFields(b); return err },
			`{"x": {"type": "number", "Private": true}}`,
			"line 1, column 2: field \"x\": unknown key \"Private\" (did you mean \"private\"?)"},
		{"field twice", func(b []byte) error { _, err := ParseFields(b); return err },
			`{"x": "number", "x": "string"}`,
			`line 1, column 17: field "x" is written twice (one value only)`},
		{"argument", func(b []byte) error { _, err := ParseArgs(b); return err },
			`{"dx": {"type": "number", "Min": 0, "max": 1}}`,
			"line 1, column 2: argument \"dx\": unknown key \"Min\" (did you mean \"min\"?)"},
		{"argument type", func(b []byte) error { _, err := ParseArgs(b); return err },
			`{"dx": {"TYPE": "number"}}`,
			"line 1, column 2: argument \"dx\": unknown key \"TYPE\" (did you mean \"type\"?)\nline 1, column 2: argument \"dx\": unknown type \"\" (want number, integer, string or boolean)"},
	} {
		if err := tc.parse([]byte(tc.in)); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %s\n got %v\nwant %s", tc.name, tc.in, err, tc.want)
		}
	}
	// The value of a wrongly cased key is not read: the bound below holds.
	args, err := ParseArgs([]byte(`{"dx": {"type": "number", "max": 1}}`))
	if err != nil || args["dx"].Min != nil {
		t.Fatalf("%+v %v", args, err)
	}
	var c struct {
		Server string `json:"hoster-config-server"`
	}
	if err := DecodeExact([]byte(`{"hoster-config-Server": "x"}`), &c, ""); err == nil || c.Server != "" ||
		err.Error() != `line 1, column 2: unknown key "hoster-config-Server" (did you mean "hoster-config-server"?)` {
		t.Fatalf("DecodeExact: %q %v", c.Server, err)
	}
}

// TestMemory: memory is an optional whole number of MiB, at least
// MinMemory; absent, it is 0 (the server's default).
func TestMemory(t *testing.T) {
	base := `{"tickRate": 20, "sendRate": 10, "capacity": 1, "origins": ["*"]%s}`
	if c, err := ParseConfig([]byte(fmt.Sprintf(base, ""))); err != nil || c.Memory != 0 {
		t.Fatalf("without memory: %+v %v, want 0", c, err)
	}
	if c, err := ParseConfig([]byte(fmt.Sprintf(base, `, "memory": 256`))); err != nil || c.Memory != 256 {
		t.Fatalf("memory 256: %+v %v", c, err)
	}
	for in, want := range map[string]string{
		`, "memory": 15`:  "memory must be at least 16 (MiB), not 15",
		`, "memory": 0.5`: `setting "memory": found the number 0.5, want a whole number`,
	} {
		if _, err := ParseConfig([]byte(fmt.Sprintf(base, in))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseConfig(...%s) = %v, want %q", in, err, want)
		}
	}
}
