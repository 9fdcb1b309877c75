package gen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/game"
)

// nodeScript drives the generated library the way a page would.
const nodeScript = `
const lib = require(process.argv[1]);
let finished = false;
const out = (o) => { if (!finished) console.log(JSON.stringify(o)); };
setTimeout(() => { out({ ev: "timeout" }); process.exit(2); }, 20000).unref();
// As a bot would in Node without a global WebSocket: the implementation is
// handed to connect.
const WS = globalThis.WebSocket;
delete globalThis.WebSocket;
let missing = "";
try { lib.connect(process.argv[2], {}); } catch (e) { missing = e.message; }
out({ ev: "no-websocket", msg: missing });
const g = lib.connect(process.argv[2], { name: "ada" }, { WebSocket: WS });
let welcomes = 0, moved = false;
g.on("welcome", (m) => {
  welcomes++;
  out({ ev: "welcome", player: m.player, resume: m.resume, players: Object.keys(g.players).length });
});
g.on("appear", (o) => {
  out({ ev: "appear", id: o.id, type: o.type });
  if (welcomes === 2) { if (!finished) { out({ ev: "done", me: g.me }); finished = true; g.close(); } return; }
  if (o.id === "e1" && !moved) {
    moved = true;
    for (const bad of [{ dx: 5, dy: 0 }, { dx: 1 }, { dx: 0, dy: 0, dz: 1 }, "x"]) {
      try { g.commands.move(bad); out({ ev: "sent-bad" }); } catch (e) { out({ ev: "rejected", msg: e.message }); }
    }
    out({ ev: "validate", msg: lib.validate("say", { text: "ééééé" }) });
    g.commands.move({ dx: 1, dy: 0 });
  }
});
g.on("change", (o, f) => { out({ ev: "change", id: o.id, x: o.x, f: f }); g.send("say", { text: "boom" }); });
g.on("gone", (o) => out({ ev: "gone", id: o.id }));
g.on("error", (e) => out({ ev: "error", msg: e }));
g.on("close", (c) => out({ ev: "close", reconnecting: c.reconnecting }));
`

// exampleClient generates the example game and returns node's path and
// the browser library's; without node, the test is skipped.
func exampleClient(t *testing.T) (node, lib string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the browser library is not exercised here")
	}
	root := copyTree(t, "../../examples/sites")
	if res, err := Generate(root); err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	return node, filepath.Join(root, "example.com/arena", ClientFile)
}

// runNode runs cmd (node), killed after 30 s, and fails the test unless
// it exits 0; it returns what node printed, and its stderr.
func runNode(t *testing.T, cmd *exec.Cmd) (out []byte, stderr string) {
	t.Helper()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	done := make(chan struct{})
	var err error
	go func() { out, err = cmd.Output(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang guard
		cmd.Process.Kill()
		<-done
	}
	if err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, out, errOut.String())
	}
	return out, errOut.String()
}

func TestClientLibraryInNode(t *testing.T) {
	node, lib := exampleClient(t)

	resumes := make(chan string, 8) // the subprotocol asked for and the resume token, per socket
	upgrader := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		resumes <- r.Header.Get("Sec-WebSocket-Protocol") + "|" + r.URL.Query().Get("resume")
		if r.URL.Query().Get("name") != "ada" {
			t.Errorf("params not passed: %s", r.URL.RawQuery)
		}
		conn.WriteJSON(map[string]any{"t": "welcome", "game": "example.com/arena", "instance": "0a0b0c0d0e0f", "player": "p1", "tickRate": 20, "sendRate": 10, "resume": "tok1"})
		conn.WriteJSON(map[string]any{"t": "update", "seq": 1, "appear": []any{
			map[string]any{"id": "p1", "type": "player", "f": map[string]any{"name": "ada", "x": 0, "y": 0, "score": 0}},
			map[string]any{"id": "e1", "type": "coin", "f": map[string]any{"x": 1, "y": 2, "value": 1}},
		}})
		for {
			var m struct {
				C string
				A map[string]any
			}
			if err := conn.ReadJSON(&m); err != nil {
				return
			}
			switch m.C {
			case "move":
				conn.WriteJSON(map[string]any{"t": "update", "seq": 2, "change": []any{map[string]any{"id": "p1", "f": map[string]any{"x": 1}}}, "gone": []string{"e1"}})
			case "say":
				conn.WriteJSON(map[string]any{"t": "error", "error": "nope"})
				return // drop the connection: the library must reconnect
			}
		}
	}))
	defer srv.Close()

	cmd := exec.Command(node, "--experimental-websocket", "--no-warnings", "-e", nodeScript, lib, "ws"+strings.TrimPrefix(srv.URL, "http")+"/arena")
	out, stderr := runNode(t, cmd)

	var events []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("node printed %q", sc.Text())
		}
		events = append(events, e)
	}
	var got []string
	for _, e := range events {
		b, _ := json.Marshal(e)
		got = append(got, string(b))
	}

	// The messages the library gives are the server's own, word for word.
	args, _ := game.ParseArgs([]byte(`{"dx": {"type": "number", "min": -1, "max": 1}, "dy": {"type": "number", "min": -1, "max": 1}}`))
	say, _ := game.ParseArgs([]byte(`{"text": {"type": "string", "maxLength": 80}}`))
	serverMsg := func(a game.Args, js string) string {
		var v any
		json.Unmarshal([]byte(js), &v)
		if err := a.Validate(v); err != nil {
			return err.Error()
		}
		return ""
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	want := []string{
		`{"ev":"no-websocket","msg":"hoster: no WebSocket in this environment: pass one, connect(url, params, {WebSocket: require(\"ws\")})"}`,
		`{"ev":"welcome","player":"p1","players":0,"resume":"tok1"}`,
		`{"ev":"appear","id":"p1","type":"player"}`,
		`{"ev":"appear","id":"e1","type":"coin"}`,
		`{"ev":"rejected","msg":` + q(serverMsg(args, `{"dx":5,"dy":0}`)) + `}`,
		`{"ev":"rejected","msg":` + q(serverMsg(args, `{"dx":1}`)) + `}`,
		`{"ev":"rejected","msg":` + q(serverMsg(args, `{"dx":0,"dy":0,"dz":1}`)) + `}`,
		`{"ev":"rejected","msg":` + q(serverMsg(args, `"x"`)) + `}`,
		`{"ev":"validate","msg":null}`,
		`{"ev":"change","f":{"x":1},"id":"p1","x":1}`,
		`{"ev":"gone","id":"e1"}`,
		`{"ev":"error","msg":"nope"}`,
		`{"ev":"close","reconnecting":true}`,
		`{"ev":"welcome","player":"p1","players":0,"resume":"tok1"}`,
		`{"ev":"appear","id":"p1","type":"player"}`,
		`{"ev":"done","me":"p1"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("node saw:\n%s\nwant:\n%s\nstderr: %s", strings.Join(got, "\n"), strings.Join(want, "\n"), stderr)
	}
	if serverMsg(say, `{"text":"ééééé"}`) != "" {
		t.Fatal("code points, not bytes, must be counted")
	}
	// This server takes no subprotocol, which fails Node's handshake: the
	// library asks again for none, and keeps to JSON.
	if got := []string{<-resumes, <-resumes, <-resumes}; strings.Join(got, " ") != "hoster.compact.1| | |tok1" {
		t.Fatalf("sockets asked for (subprotocol|resume token): %q, want the compact protocol, then none, then none with tok1", got)
	}
}

// A compact update the library cannot decode ends its socket (close 3000)
// and it resumes on a new one, which starts over; a good one is decoded
// into the same events as JSON.
func TestClientLibraryResumesAfterAnUndecodableUpdate(t *testing.T) {
	node, lib := exampleClient(t)
	closes := make(chan int, 4)
	upgrader := websocket.Upgrader{Subprotocols: []string{"hoster.compact.1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		if conn.Subprotocol() != "hoster.compact.1" {
			t.Errorf("the library did not ask for the compact protocol")
			return
		}
		resumed := r.URL.Query().Get("resume") == "tok1"
		conn.WriteMessage(websocket.TextMessage, []byte(`{"t":"welcome","game":"example.com/arena","instance":"0a0b0c0d0e0f","player":"p1","tickRate":20,"sendRate":10,"resume":"tok1",
"types":[{"type":"player","fields":[{"name":"name","type":"string"},{"name":"x","type":"number","q":100}],"private":[]}]}`))
		if !resumed {
			// A change of handle 5, never told of.
			conn.WriteMessage(websocket.BinaryMessage, []byte{1, 1, 0, 0, 1, 5, 0b10, 4, 0})
		} else {
			// p1 appears: handle 1, type 0, "p1", name "ada" and x 0.5.
			conn.WriteMessage(websocket.BinaryMessage, []byte{1, 1, 0, 1, 1, 0, 2, 'p', '1', 0b110, 3, 'a', 'd', 'a', 102, 0, 0})
		}
		_, _, err = conn.ReadMessage()
		if ce, ok := err.(*websocket.CloseError); ok {
			closes <- ce.Code
		}
	}))
	defer srv.Close()
	cmd := exec.Command(node, "--experimental-websocket", "--no-warnings", "-e", `
const lib = require(process.argv[1]);
setTimeout(() => { console.log("timeout"); process.exit(2); }, 20000).unref();
const g = lib.connect(process.argv[2], {}, { WebSocket: globalThis.WebSocket });
g.on("close", (c) => console.log(JSON.stringify({ ev: "close", code: c.code, reconnecting: c.reconnecting })));
g.on("appear", (o) => { console.log(JSON.stringify({ ev: "appear", o })); g.close(); process.exit(0); });
`, lib, "ws"+strings.TrimPrefix(srv.URL, "http")+"/arena")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr.String())
	}
	want := `{"ev":"close","code":3000,"reconnecting":true}
{"ev":"appear","o":{"id":"p1","type":"player","name":"ada","x":0.5}}
`
	if string(out) != want {
		t.Fatalf("node saw:\n%s\nwant:\n%s\nstderr: %s", out, want, stderr.String())
	}
	if code := <-closes; code != 3000 {
		t.Fatalf("the library closed the socket with %d, want 3000", code)
	}
	if !strings.Contains(stderr.String(), "changes a thing it never told of") {
		t.Fatalf("the library did not say why: %s", stderr.String())
	}
}

// The browser library's own unit tests (js/client.test.js: the argument
// rule, the compact decoder, room links, interpolation, reconnection per
// close code and its backoff, the handshake fallback) run in Node, on
// js/client.js as gen fills it; without node they are skipped.
func TestClientLibraryUnits(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the browser library's JavaScript tests (js/client.test.js) need it")
	}
	out, stderr := runNode(t, exec.Command(node, "--test", "--test-reporter=dot", filepath.Join("js", "client.test.js")))
	if testing.Verbose() {
		t.Logf("%s%s", out, stderr)
	}
}
