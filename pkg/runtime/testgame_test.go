package runtime

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/gen"
)

// testGame generates files as a game and opens it as a TestGame.
func testGame(t *testing.T, files map[string]string) *TestGame {
	t.Helper()
	root := t.TempDir()
	writeGame(t, root, "t.example", "g", files)
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating: %v %v", err, res.Problems())
	}
	tg, err := NewTestGame(root + "/t.example/g")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	return tg
}

func frames(p *TestPlayer, kind string) []map[string]any {
	var out []map[string]any
	for _, m := range p.Messages() {
		var v map[string]any
		json.Unmarshal(m, &v)
		if v["t"] == kind {
			out = append(out, v)
		}
	}
	return out
}

// TestTestGameRunsTheRealRuntime drives a game on the virtual clock: ticks
// happen only when advanced, commands are validated as on a socket, updates
// and messages arrive in their rounds, errors stay in their command.
func TestTestGameRunsTheRealRuntime(t *testing.T) {
	files := lab(4)
	files["hoster-game.json"] = `{"tickRate": 20, "sendRate": 10, "capacity": 4, "origins": ["*"]}`
	files["hoster-instance/tick.js"] = `export default function (i, dt) { i.state.t = (i.state.t || 0) + dt; i.state.ticks = (i.state.ticks || 0) + 1; }`
	files["hoster-instance/create.js"] = `export default function (i) { i.state = {}; i.spawn("box", {n: 1}); }`
	files["hoster-commands/boom/run.js"] = `export default function (i, p) { null.x; }`
	files["hoster-commands/hello/run.js"] = `export default function (i, p) { i.log("hello from", p.name); i.send(p, "hi", {to: p.name}); }`
	tg := testGame(t, files)

	ada, err := tg.Join(map[string]string{"name": "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	var state struct {
		T     float64
		Ticks int
	}
	raw, _ := tg.State()
	json.Unmarshal(raw, &state)
	// 1 tick to join, 20 in the second: the virtual clock, not the wall's.
	if state.Ticks != 21 || state.T < 1.04 || state.T > 1.06 {
		t.Fatalf("state after 1 s: %s", raw)
	}
	// Updates go out only when something a viewer sees changed: once.
	if len(frames(ada, "welcome")) != 1 || !ada.Sees(ada.ID()) || len(frames(ada, "update")) != 1 {
		t.Fatalf("ada got %d welcomes, %d updates; sees herself: %v", len(frames(ada, "welcome")), len(frames(ada, "update")), ada.Sees(ada.ID()))
	}

	ada.Send("move", json.RawMessage(`{"dx": 5}`))
	if e := frames(ada, "error"); len(e) != 1 || e[0]["error"] != `argument "dx" must be at most 1` {
		t.Fatalf("errors %v", e)
	}
	ada.Send("move", json.RawMessage(`{"dx": 1}`))
	ada.Send("boom", nil)
	ada.Send("hello", nil)
	tg.Advance(100 * time.Millisecond)
	raw, _ = tg.Players()
	if !strings.Contains(string(raw), `"x":1`) {
		t.Fatalf("players after a move: %s", raw)
	}
	if e := frames(ada, "error"); len(e) != 2 || e[1]["error"] != "command boom failed" {
		t.Fatalf("errors %v", e)
	}
	if m := frames(ada, "message"); len(m) != 1 || m[0]["type"] != "hi" {
		t.Fatalf("messages %v", m)
	}
	logs := strings.Join(tg.Logs(), "\n")
	if !strings.Contains(logs, "hello from ada") || !strings.Contains(logs, "hoster-commands/boom/run.js:1") {
		t.Fatalf("logs:\n%s", logs)
	}

	bob, _ := tg.Join(map[string]string{"name": "bob"})
	tg.Advance(100 * time.Millisecond)
	if !ada.Sees(bob.ID()) {
		t.Fatal("ada does not see bob")
	}
	bob.Leave()
	tg.Advance(100 * time.Millisecond)
	if ada.Sees(bob.ID()) {
		t.Fatal("ada still sees bob after he left")
	}
}

// TestTestGameEndsWithTheInstance: a game whose hook closes the instance
// ends the test game with the reason, and the players get the close.
func TestTestGameEndsWithTheInstance(t *testing.T) {
	files := lab(4)
	files["hoster-commands/quit/run.js"] = `export default function (i) { i.close("game over"); }`
	tg := testGame(t, files)
	ada, _ := tg.Join(nil)
	ada.Send("quit", nil)
	err := tg.Advance(time.Second)
	if err == nil {
		t.Fatal("advancing a closed instance did not fail")
	}
	c := frames(ada, "close")
	if len(c) != 1 || c[0]["code"] != float64(4001) || c[0]["reason"] != "game over" {
		t.Fatalf("close frames %v", c)
	}
}
