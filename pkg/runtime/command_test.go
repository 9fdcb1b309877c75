package runtime

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hoster-dev/hoster/pkg/game"
)

// BenchmarkCommandFrame is the decoding of one of bench/load's move frames
// as a connection takes it: parsed, then checked against args.json.
func BenchmarkCommandFrame(b *testing.B) {
	args, err := game.ParseArgs([]byte(`{"dx": {"type": "number", "min": -1, "max": 1}, "dy": {"type": "number", "min": -1, "max": 1}}`))
	if err != nil {
		b.Fatal(err)
	}
	frame := []byte(`{"c":"move","a":{"dx":0.7071,"dy":-0.7071}}`)
	for b.Loop() {
		m, err := parseCommand(frame)
		if err != nil {
			b.Fatal(err)
		}
		if err := args.Validate(m.A); err != nil {
			b.Fatal(err)
		}
	}
}

// quickCommand reads every frame it accepts as encoding/json does, and
// leaves to encoding/json every frame it cannot read the same way.
func TestQuickCommandAgreesWithJSON(t *testing.T) {
	for _, frame := range quickFrames {
		checkQuickCommand(t, []byte(frame))
	}
	for _, frame := range quickFrames[:3] { // the usual frames take the quick way
		if _, ok := quickCommand([]byte(frame)); !ok {
			t.Errorf("quickCommand left %s to encoding/json", frame)
		}
	}
}

func FuzzQuickCommand(f *testing.F) {
	for _, frame := range quickFrames {
		f.Add([]byte(frame))
	}
	f.Fuzz(func(t *testing.T, frame []byte) { checkQuickCommand(t, frame) })
}

var quickFrames = []string{
	`{"c":"move","a":{"dx":0.7071,"dy":-0.7071}}`,
	` { "c" : "move" , "a" : { "dx" : 1e3 , "s" : "hé" , "b" : true , "f" : false , "n" : null } } `,
	`{"a":{},"c":"x"}`, `{"c":"x"}`, `{"c":"x","a":null}`, `{"c":"x","a":{"k":-0}}`,
	`{"c":"x","a":{"k":01}}`, `{"c":"x","a":{"k":1.}}`, `{"c":"x","a":{"k":-}}`, `{"c":"x","a":{"k":1e}}`,
	`{"c":"x","a":{"k":1e999}}`, `{"c":"x","a":{"k":"a\"b"}}`, `{"c":"x","a":{"k":[1]}}`, `{"c":"x","a":{"k":{}}}`,
	`{"c":"x","a":{"k":1,"k":2}}`, `{"c":"x","c":"y"}`, `{"C":"x"}`, `{"c":"x","z":1}`, `{"c":""}`, `{}`,
	`{"c":"x"} x`, `{"c":"x",}`, `{"c":"x","a":{"k":1,}}`, `{"c":"x","a":3}`, `{"c":null}`, "{\"c\":\"\xff\"}",
	`{"c":"x","a":{"k":truex}}`, `{"c":"x","a":{"k":nul}}`, `[]`, ``, `{"c":"x"`, "{\"c\":\"a\tb\"}",
}

func checkQuickCommand(t *testing.T, frame []byte) {
	t.Helper()
	quick, ok := quickCommand(frame)
	if !ok {
		return
	}
	var m command
	if err := json.Unmarshal(frame, &m); err != nil || m.C == "" {
		t.Fatalf("quickCommand read %q, which encoding/json refuses (%v)", frame, err)
	}
	if !reflect.DeepEqual(quick, m) {
		t.Fatalf("quickCommand read %q as %#v, encoding/json as %#v", frame, quick, m)
	}
}
