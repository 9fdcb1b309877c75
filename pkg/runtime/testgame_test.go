package runtime

import (
	"encoding/json"
	"slices"
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

// roomsGame is a small game for rooms, locks, kicks and resumes: hooks
// log what happened to whom.
func roomsGame() map[string]string {
	files := lab(2)
	files["hoster-game.json"] = `{"tickRate": 20, "sendRate": 10, "capacity": 2, "origins": ["*"], "resumeGrace": 5}`
	files["hoster-player/disconnect.js"] = `export default function (i, p) { i.log("disconnect " + p.name); }`
	files["hoster-player/reconnect.js"] = `export default function (i, p) { i.log("reconnect " + p.name); }`
	files["hoster-player/leave.js"] = `export default function (i, p) { i.log("leave " + p.name); }`
	files["hoster-commands/lock/run.js"] = `export default function (i) { i.lock(); }`
	files["hoster-commands/unlock/run.js"] = `export default function (i) { i.unlock(); }`
	files["hoster-commands/kick/args.json"] = `{"target": "string"}`
	files["hoster-commands/kick/run.js"] = `export default function (i, p, a) { i.kick(i.players[a.target], "bye"); }`
	return files
}

func join(t *testing.T, tg *TestGame, params map[string]string) *TestPlayer {
	t.Helper()
	p, err := tg.Join(params)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func lastFrame(p *TestPlayer) map[string]any {
	var v map[string]any
	if m := p.Messages(); len(m) > 0 {
		json.Unmarshal(m[len(m)-1], &v)
	}
	return v
}

func wantClosed(t *testing.T, p *TestPlayer, code int, reason string) {
	t.Helper()
	if c := lastFrame(p); c["t"] != "close" || c["code"] != float64(code) || c["reason"] != reason {
		t.Fatalf("last frame %v, want a close %d %q", c, code, reason)
	}
}

// TestTestGameRooms: joins with a room code go to that room's instance and
// only there; its capacity and lock turn players away with 1013, as the
// socket does; a locked public instance sends new players to another.
func TestTestGameRooms(t *testing.T) {
	tg := testGame(t, roomsGame())
	ada := join(t, tg, map[string]string{"name": "ada", "room": "r1"})
	bob := join(t, tg, map[string]string{"name": "bob", "room": "r1"})
	carol := join(t, tg, map[string]string{"name": "carol"})
	r1, pub := ada.Instance(), carol.Instance()
	if r1 == nil || bob.Instance() != r1 || pub == r1 || r1.Room() != "r1" || pub.Room() != "" {
		t.Fatalf("ada in %v, bob in %v, carol in %v", ada.Instance(), bob.Instance(), carol.Instance())
	}
	if in := tg.Instances(); len(in) != 2 || in[0] != r1 || in[1] != pub {
		t.Fatalf("instances %v, want r1's then the public one", in)
	}
	if w := frames(ada, "welcome"); len(w) != 1 || w[0]["room"] != "r1" {
		t.Fatalf("ada's welcome %v", w)
	}
	raw, _ := r1.Players()
	if !strings.Contains(string(raw), `"name":"bob"`) || strings.Contains(string(raw), "carol") {
		t.Fatalf("r1's players %s", raw)
	}

	eve := join(t, tg, map[string]string{"name": "eve", "room": "r1"})
	if eve.ID() != "" || eve.Instance() != nil {
		t.Fatalf("eve joined a full room as %q", eve.ID())
	}
	if e := frames(eve, "error"); len(e) != 1 || e[0]["error"] != "room r1 is full" {
		t.Fatalf("eve's errors %v", e)
	}
	wantClosed(t, eve, 1013, "room r1 is full")
	if err := eve.Send("move", json.RawMessage(`{"dx": 1}`)); err == nil {
		t.Fatal("a refused player could send")
	}

	ada.Send("lock", nil)
	tg.Advance(50 * time.Millisecond)
	if !r1.Locked() {
		t.Fatal("r1 is not locked after the lock command")
	}
	bob.Leave()
	tg.Advance(50 * time.Millisecond)
	wantClosed(t, join(t, tg, map[string]string{"name": "eve", "room": "r1"}), 1013, "room r1 is locked")
	ada.Send("unlock", nil)
	tg.Advance(50 * time.Millisecond)
	if eve := join(t, tg, map[string]string{"name": "eve", "room": "r1"}); eve.Instance() != r1 || r1.Locked() {
		t.Fatalf("after unlock eve is in %v", eve.Instance())
	}

	// The public instance has room for one more, but is locked: a second
	// public instance starts.
	carol.Send("lock", nil)
	tg.Advance(50 * time.Millisecond)
	dave := join(t, tg, map[string]string{"name": "dave"})
	if in := tg.Instances(); len(in) != 3 || dave.Instance() != in[2] || dave.Instance().Room() != "" {
		t.Fatalf("dave in %v of %v", dave.Instance(), in)
	}
	if _, err := tg.Join(map[string]string{"room": "no-dashes"}); err == nil {
		t.Fatal("a bad room code was taken")
	}
}

// TestTestGameDropAndResume: a dropped connection holds the seat
// (disconnect runs, connected is false) until a resume (reconnect runs, a
// new welcome, the same player) or until resumeGrace passes on the virtual
// clock: then the player leaves and the others see it gone.
func TestTestGameDropAndResume(t *testing.T) {
	tg := testGame(t, roomsGame())
	ada := join(t, tg, map[string]string{"name": "ada"})
	bob := join(t, tg, map[string]string{"name": "bob"})
	tg.Advance(100 * time.Millisecond)
	connected := func() bool {
		t.Helper()
		var players map[string]struct{ Connected bool }
		raw, _ := tg.Players()
		json.Unmarshal(raw, &players)
		if _, ok := players[ada.ID()]; !ok {
			t.Fatalf("ada is not in the players: %s", raw)
		}
		return players[ada.ID()].Connected
	}
	hasLog := func(line string) bool { return slices.Contains(tg.Logs(), line) }

	if err := ada.Drop(); err != nil {
		t.Fatal(err)
	}
	if err := ada.Send("move", json.RawMessage(`{"dx": 1}`)); err == nil {
		t.Fatal("a dropped player could send")
	}
	tg.Advance(50 * time.Millisecond)
	if connected() || !hasLog("disconnect ada") {
		t.Fatalf("after a drop: connected %v, logs %q", connected(), tg.Logs())
	}
	n := len(ada.Messages())
	tg.Advance(time.Second)
	if len(ada.Messages()) != n {
		t.Fatal("a dropped player still got frames")
	}
	if err := ada.Resume(); err != nil {
		t.Fatal(err)
	}
	tg.Advance(100 * time.Millisecond)
	if w := frames(ada, "welcome"); !connected() || !hasLog("reconnect ada") || len(w) != 2 || w[1]["player"] != ada.ID() || !ada.Sees(bob.ID()) {
		t.Fatalf("after a resume: connected %v, welcomes %v, sees bob %v, logs %q", connected(), w, ada.Sees(bob.ID()), tg.Logs())
	}
	if err := ada.Resume(); err == nil {
		t.Fatal("a connected player resumed")
	}

	ada.Drop()
	tg.Advance(4900 * time.Millisecond)
	if hasLog("leave ada") || !bob.Sees(ada.ID()) {
		t.Fatal("ada left before resumeGrace passed")
	}
	tg.Advance(200 * time.Millisecond)
	if !hasLog("leave ada") || bob.Sees(ada.ID()) {
		t.Fatalf("5 s after the drop: bob sees ada %v, logs %q", bob.Sees(ada.ID()), tg.Logs())
	}
	if err := ada.Resume(); err == nil {
		t.Fatal("ada resumed after resumeGrace")
	}
}

// TestTestGameKick: a kicked player's frames end with its close (4000, the
// reason); it leaves at once and cannot resume.
func TestTestGameKick(t *testing.T) {
	tg := testGame(t, roomsGame())
	ada := join(t, tg, map[string]string{"name": "ada", "room": "k"})
	bob := join(t, tg, map[string]string{"name": "bob", "room": "k"})
	bob.Send("kick", json.RawMessage(`{"target": "`+ada.ID()+`"}`))
	tg.Advance(50 * time.Millisecond)
	wantClosed(t, ada, 4000, "bye")
	tg.Advance(50 * time.Millisecond) // the leave is applied at the next tick
	if !slices.Contains(tg.Logs(), "leave ada") || bob.Sees(ada.ID()) {
		t.Fatalf("logs %q", tg.Logs())
	}
	if ada.Drop() == nil || ada.Resume() == nil {
		t.Fatal("a kicked player could drop or resume")
	}
}

// TestTestGameEmptyInstanceEnds: an instance left empty ends after the
// empty grace on the virtual clock, quietly; its data stays readable and
// the next player starts a new one.
func TestTestGameEmptyInstanceEnds(t *testing.T) {
	tg := testGame(t, roomsGame())
	ada := join(t, tg, map[string]string{"name": "ada", "room": "e"})
	r := ada.Instance()
	ada.Leave()
	if err := tg.Advance(9 * time.Second); err != nil || r.Ended() {
		t.Fatalf("9 s empty: ended %v, %v", r.Ended(), err)
	}
	if err := tg.Advance(2 * time.Second); err != nil || !r.Ended() {
		t.Fatalf("11 s empty: ended %v, %v", r.Ended(), err)
	}
	if raw, err := r.Entities(); err != nil || !strings.Contains(string(raw), `"box"`) {
		t.Fatalf("an ended instance's entities: %s %v", raw, err)
	}
	if bob := join(t, tg, map[string]string{"name": "bob", "room": "e"}); bob.Instance() == r || bob.Instance() == nil {
		t.Fatal("bob joined the ended instance")
	}
}

// TestCreateReturnsTheState: what create returns becomes instance.state, as
// the guide says; a create that returns nothing keeps what it set there.
func TestCreateReturnsTheState(t *testing.T) {
	for _, tc := range []struct{ create, want string }{
		{`export default function (i) { return { it: null, round: 1 }; }`, `{"it":null,"round":1}`},
		{`export default function (i) { i.state.round = 2; i.state.tag = i.state.round > 1; return { round: 3 }; }`, `{"round":3}`},
		{`export default function (i) { i.state = { round: 4 }; }`, `{"round":4}`},
		{`export default function (i) { i.state.round = 5; return undefined; }`, `{"round":5}`},
	} {
		files := lab(4)
		files["hoster-instance/create.js"] = tc.create
		files["hoster-instance/tick.js"] = `export default function (i) { i.state.seen = i.state.round; }`
		tg := testGame(t, files)
		if err := tg.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		raw, err := tg.State()
		if err != nil {
			t.Fatal(err)
		}
		// The ticks work on that state: seen is its round.
		var got map[string]any
		json.Unmarshal(raw, &got)
		seen := got["seen"]
		delete(got, "seen")
		if b, _ := json.Marshal(got); string(b) != tc.want || seen != got["round"] {
			t.Errorf("create %s: state %s, want %s and seen the round", tc.create, raw, tc.want)
		}
	}
}

// TestKickedPlayerGoneAtOnce: after kick returns, the player is in no list
// a hook reads; its leave hook runs once, during the kick, with the player
// still listed (as for any leave); the others are told gone at their next
// update and the player gets 4000 and the reason.
func TestKickedPlayerGoneAtOnce(t *testing.T) {
	files := lab(4)
	files["hoster-commands/boot/args.json"] = `{"who": "string"}`
	files["hoster-commands/boot/run.js"] = `export default function (i, p, a) {
  i.kick(a.who, "bye");
  i.state.after = Object.keys(i.players).sort();
  i.send(a.who, "late", {}); // to nobody: the player is gone
}`
	// Kicking the player again from its own leave hook changes nothing.
	files["hoster-player/leave.js"] = `export default function (i, p) {
  i.state.left = (i.state.left || []).concat([p.id + (p.id in i.players ? " listed" : " unlisted")]);
  i.kick(p, "again");
}`
	files["hoster-instance/tick.js"] = `export default function (i) { i.state.tickSaw = Object.keys(i.players).length; }`
	tg := testGame(t, files)
	ada, err := tg.Join(map[string]string{"name": "ada"})
	if err != nil {
		t.Fatal(err)
	}
	cy, err := tg.Join(map[string]string{"name": "cy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Advance(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !ada.Sees(cy.ID()) {
		t.Fatal("ada does not see cy")
	}
	ada.Send("boot", json.RawMessage(`{"who": "`+cy.ID()+`"}`))
	if err := tg.Advance(time.Second / 50); err != nil { // one tick of lab's: it runs the command
		t.Fatal(err)
	}
	want := `{"after":["` + ada.ID() + `"],"left":["` + cy.ID() + ` listed"],"tickSaw":1}`
	state := func() string { // keys sorted
		raw, _ := tg.State()
		var m map[string]any
		json.Unmarshal(raw, &m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	if got := state(); got != want {
		t.Fatalf("state after the kick's tick %s, want %s", got, want)
	}
	if raw, _ := tg.Players(); strings.Contains(string(raw), cy.ID()) {
		t.Fatalf("players after the kick %s", raw)
	}
	if err := tg.Advance(100 * time.Millisecond); err != nil { // the seat's leave reaches the game
		t.Fatal(err)
	}
	if got := state(); got != want {
		t.Fatalf("state later %s, want %s: the leave ran again", got, want)
	}
	if ada.Sees(cy.ID()) {
		t.Fatal("ada still sees cy after the kick")
	}
	c := frames(cy, "close")
	if len(c) != 1 || c[0]["code"] != float64(4000) || c[0]["reason"] != "bye" || len(frames(cy, "message")) != 0 {
		t.Fatalf("cy got closes %v and messages %v", c, frames(cy, "message"))
	}
}

// A TestGame applies the game's maxInstances as a server does, and no
// per-address bound: its players have no address.
func TestTestGameMaxInstances(t *testing.T) {
	files := roomsGame()
	files["hoster-game.json"] = `{"tickRate": 20, "sendRate": 10, "capacity": 2, "origins": ["*"], "maxInstances": 2, "emptyGrace": 0}`
	tg := testGame(t, files)
	for i := range DefaultRoomsPerMinute + 5 { // past the per-address bound, were there one
		if err := join(t, tg, map[string]string{"room": "r1"}).Leave(); err != nil {
			t.Fatal(err)
		}
		if err := tg.Advance(time.Second); err != nil { // the empty instance ends
			t.Fatalf("round %d: %v", i, err)
		}
	}
	if n := len(tg.Instances()); n != DefaultRoomsPerMinute+5 {
		t.Fatalf("%d instances started, want %d", n, DefaultRoomsPerMinute+5)
	}
	join(t, tg, map[string]string{"name": "ada", "room": "r1"})
	join(t, tg, map[string]string{"name": "bob", "room": "r2"})
	eve := join(t, tg, map[string]string{"name": "eve", "room": "r3"})
	wantClosed(t, eve, 1013, "the game runs as many instances as it may (2): try again later")
}
