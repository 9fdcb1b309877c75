package gen

import (
	"os/exec"
	"strings"
	"testing"
)

// A socket the server refuses before it opens (an Origin not in origins,
// a game not loaded) closes over and over without a welcome: after the
// third, the library says so in the console, once, with what to check.
func TestClientSaysWhenTheSocketIsRefused(t *testing.T) {
	node, lib := exampleClient(t)
	// A browser's WebSocket refused at the handshake: close 1006, never
	// open. (Node's own fires no close then, so the test brings its own.)
	script := `
let tries = 0;
globalThis.WebSocket = class {
  constructor(url) { tries++; setTimeout(() => this.onclose({ code: 1006, reason: "" }), 1); }
  close() {}
};
const lib = require(process.argv[1]);
console.warn = (msg) => { console.log(tries + " " + msg); process.exit(0); };
setTimeout(() => { console.log("no warning"); process.exit(2); }, 20000).unref();
lib.connect("wss://example.com/arena", {});
`
	out, _ := runNode(t, exec.Command(node, "-e", script, lib))
	n, msg, _ := strings.Cut(string(out), " ")
	for _, want := range []string{"closed before its welcome 3 times", `"origins"`, "hoster-game.json", "the URL"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the warning %q lacks %q", msg, want)
		}
	}
	if n != "3" {
		t.Errorf("warned after %s refusals, want 3", n)
	}
}
