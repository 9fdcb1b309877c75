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
// Every test gets a fresh instance of the game from a [Factory], which the
// caller backs with the real runtime (the same tick, deltas and validation
// a server runs) on a virtual clock: nothing waits for real time. Values
// cross between the test's runtime and the game's as JSON.
//
// Results are printed the way Go's and Node's runners print them: an "ok"
// or "FAIL" line per test, the failure's message and the test file's own
// file:line, and a closing "N passed, M failed".
package gametest

import (
	"encoding/json"
	"time"
)

// Factory starts a fresh instance of the game in dir (an absolute path to
// <root>/<domain>/<game>) for one test.
type Factory func(dir string) (Game, error)

// Game is one instance of a game under test, on a virtual clock.
type Game interface {
	// Join seats a new player with the socket URL's query params and
	// returns it once the join has been applied (after the next tick).
	Join(params map[string]string) (Player, error)
	// Advance moves the virtual clock on by d, running every tick and send
	// round that falls due, in order.
	Advance(d time.Duration) error
	// State is instance.state, as JSON.
	State() (json.RawMessage, error)
	// Players and Entities are instance.players and instance.entities, as
	// JSON objects keyed by id.
	Players() (json.RawMessage, error)
	Entities() (json.RawMessage, error)
	// Logs are the instance.log lines so far.
	Logs() []string
	// Close ends the instance.
	Close()
}

// Player is one player of a Game.
type Player interface {
	// ID is the player's id.
	ID() string
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
}
