package gen

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A socket the server refuses before it opens (an Origin not in origins,
// a game not loaded) closes over and over without a welcome: after the
// third, the library says so in the console, once, with what to check.
func TestClientSaysWhenTheSocketIsRefused(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the browser library is not exercised here")
	}
	root := copyTree(t, "../../examples/sites")
	if res, err := Generate(root); err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	lib := filepath.Join(root, "example.com/arena", ClientFile)
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
	cmd := exec.Command(node, "-e", script, lib)
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
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
