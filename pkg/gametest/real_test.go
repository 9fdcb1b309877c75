package gametest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/gen"
)

// roomsGame is a small game whose hooks log what happens to whom, with
// commands to lock, unlock and kick.
var roomsGame = map[string]string{
	"hoster-game.json":               `{"tickRate": 20, "sendRate": 10, "capacity": 2, "origins": ["*"], "resumeGrace": 5}`,
	"hoster-player/fields.json":      `{"name": "string"}`,
	"hoster-player/join.js":          `export default function (i, p, params) { p.name = params.name; }`,
	"hoster-player/disconnect.js":    `export default function (i, p) { i.log("disconnect " + p.name); }`,
	"hoster-player/reconnect.js":     `export default function (i, p) { i.log("reconnect " + p.name); }`,
	"hoster-player/leave.js":         `export default function (i, p) { i.log("leave " + p.name); }`,
	"hoster-instance/create.js":      `export default function (i, params) { i.state = { room: params.room || null }; }`,
	"hoster-commands/lock/run.js":    `export default function (i) { i.lock(); }`,
	"hoster-commands/unlock/run.js":  `export default function (i) { i.unlock(); }`,
	"hoster-commands/kick/args.json": `{"target": "string"}`,
	"hoster-commands/kick/run.js":    `export default function (i, p, a) { i.kick(i.players[a.target], "bye"); }`,
}

// roomsTests drive the game through rooms, locks, drops, resumes, kicks
// and the empty instance's end, each in the real runtime.
const roomsTests = `
test("rooms", () => {
  const ada = game.join({ name: "ada", room: "r1" }), bob = game.join({ name: "bob", room: "r1" });
  const carol = game.join({ name: "carol" });
  assert.equal(ada.instance, bob.instance);
  assert.notEqual(carol.instance, ada.instance);
  assert.equal(game.instances.length, 2);
  assert.equal(game.instances[0], ada.instance);
  assert.equal(ada.instance.room, "r1");
  assert.equal(carol.instance.room, null);
  assert.deepEqual(game.state, { room: "r1" });
  assert.deepEqual(carol.instance.state, { room: null });
  assert.deepEqual(Object.keys(carol.instance.players), [carol.id]);
  const eve = game.join({ name: "eve", room: "r1" });
  assert.equal(eve.instance, null);
  assert.deepEqual(eve.messages.at(-1), { t: "close", code: 1013, reason: "room r1 is full" });
});

test("lock", () => {
  const ada = game.join({ name: "ada", room: "r1" });
  ada.send("lock", {});
  game.advance(0.05);
  assert(ada.instance.locked);
  assert.deepEqual(game.join({ room: "r1" }).messages.at(-1), { t: "close", code: 1013, reason: "room r1 is locked" });
  ada.send("unlock", {});
  game.advance(0.05);
  assert.equal(game.join({ name: "bob", room: "r1" }).instance, ada.instance);
  const carol = game.join({ name: "carol" });
  carol.send("lock", {});
  game.advance(0.05);
  const dave = game.join({ name: "dave" });
  assert.notEqual(dave.instance, carol.instance);
  assert.equal(game.instances.length, 3);
});

test("drop and resume", () => {
  const ada = game.join({ name: "ada" }), bob = game.join({ name: "bob" });
  ada.drop();
  game.advance(0.05);
  assert.equal(game.players[ada.id].connected, false);
  assert(game.logs.includes("disconnect ada"));
  ada.resume();
  assert.equal(game.players[ada.id].connected, true);
  assert(game.logs.includes("reconnect ada"));
  assert.deepEqual(ada.messages.filter((m) => m.t === "welcome").map((m) => m.player), [ada.id, ada.id]);
  ada.drop();
  game.advance(4.9);
  assert(bob.sees(ada.id));
  game.advance(0.2);
  assert(game.logs.includes("leave ada"));
  assert(!bob.sees(ada.id));
  assert.equal(game.players[ada.id], undefined);
  const e = assert.throws(() => ada.resume());
  assert(e.message.startsWith("player.resume: its seat is gone"), e.message);
});

test("kick", () => {
  const ada = game.join({ name: "ada" }), bob = game.join({ name: "bob" });
  bob.send("kick", { target: ada.id });
  game.advance(0.1);
  assert.deepEqual(ada.messages.at(-1), { t: "close", code: 4000, reason: "bye" });
  assert(game.logs.includes("leave ada"));
  assert.throws(() => ada.send("kick", { target: bob.id }));
});

test("an empty instance ends", () => {
  const ada = game.join({ name: "ada", room: "x" });
  ada.leave();
  game.advance(11);
  assert(ada.instance.ended);
  assert.deepEqual(ada.instance.state, { room: "x" });
  assert.notEqual(game.join({ name: "bob", room: "x" }).instance, ada.instance);
});
`

// TestRealRooms runs tests of rooms, locks, drops, resumes and kicks on a
// real game in the real runtime, through the test API.
func TestRealRooms(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a.com", "rooms")
	files := map[string]string{Folder + "/rooms.test.js": roomsTests}
	for k, v := range roomsGame {
		files[k] = v
	}
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating: %v %v", err, res.Problems())
	}
	var out strings.Builder
	sum, err := RunGame(root, "a.com/rooms", Real, &out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 0 || sum.Passed != 5 {
		t.Fatalf("%d passed, %d failed:\n%s", sum.Passed, sum.Failed, out.String())
	}
}
