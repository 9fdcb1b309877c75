// Package gametest runs a game's own tests, the files in its _tests/ folder,
// for `hoster test`. Each test file is a JavaScript or TypeScript module,
// bundled by esbuild and run in its own goja runtime with a small API:
//
//	test("tagging scores", () => {
//	  const a = game.join({ name: "a" }), b = game.join({ name: "b" });
//	  game.advance(0.5);
//	  a.send("tag", { target: b.id });
//	  game.advance(0.1);
//	  assert.equal(game.players[a.id].score, 1);
//	  assert(a.sees(b.id));
//	});
//
// Every test gets a fresh game from a [Factory]; hoster test's, [Real], is
// the real runtime (the same tick, deltas, validation, rooms and resumes a
// server runs) on a virtual clock: nothing waits for real time. game.state
// and the like are its first instance's; game.instances and
// player.instance reach the others (rooms, or a public instance started
// because the first was full or locked). Values cross between the test's
// runtime and the game's as JSON.
//
// Results are printed the way Go's and Node's runners print them: an "ok"
// or "FAIL" line per test, the failure's message and the test file's own
// file:line, and a closing "N passed, M failed".
package gametest

import (
	"encoding/json"
	"time"
)

// Factory starts a fresh game in dir (an absolute path to
// <root>/<domain>/<game>) for one test.
type Factory func(dir string) (Game, error)

// Game is a game under test: its instances, on one virtual clock.
type Game interface {
	// Join connects a new player with the socket URL's query params
	// (params["room"] joins that room) and returns it once the join has
	// been applied (after the next tick of its instance). A player the
	// game turns away (a full or locked room) is returned closed: no ID,
	// no Instance, and messages saying why.
	Join(params map[string]string) (Player, error)
	// Advance moves the virtual clock on by d, running every tick and send
	// round of every instance, and every resume grace and empty
	// instance's end, that falls due, in order.
	Advance(d time.Duration) error
	// State, Players and Entities are the first instance's (a public one
	// is started when there is none yet).
	State() (json.RawMessage, error)
	Players() (json.RawMessage, error)
	Entities() (json.RawMessage, error)
	// Instances are the instances started so far, in order, ended ones
	// included.
	Instances() []Instance
	// Logs are the instance.log lines so far.
	Logs() []string
	// Close ends the instances.
	Close()
}

// Instance is one instance of a Game.
type Instance interface {
	// ID is the instance's id; Room is its room code, "" when public.
	ID() string
	Room() string
	// Locked reports whether the game locked it; Ended whether it ended.
	Locked() bool
	Ended() bool
	// State is instance.state, as JSON.
	State() (json.RawMessage, error)
	// Players and Entities are instance.players and instance.entities, as
	// JSON objects keyed by id.
	Players() (json.RawMessage, error)
	Entities() (json.RawMessage, error)
}

// Player is one player of a Game.
type Player interface {
	// ID is the player's id, "" when its join was refused.
	ID() string
	// Instance is the player's instance, nil when its join was refused.
	Instance() Instance
	// Send queues a command, validated against its args.json as a socket
	// command is; a rejected command is answered with an error message, as
	// on the socket.
	Send(command string, args json.RawMessage) error
	// Messages are the frames the player received so far, as JSON.
	Messages() []json.RawMessage
	// Sees reports whether id is in the player's view: appeared in its
	// updates and not gone since.
	Sees(id string) bool
	// Leave closes the player's socket cleanly (a leave).
	Leave() error
	// Drop loses the player's connection without a close: its seat is
	// held for the game's resumeGrace.
	Drop() error
	// Resume connects a dropped player again with its resume token.
	Resume() error
}
