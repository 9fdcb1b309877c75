package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHosterTest runs the example's own tests with hoster test, then a
// failing one: exit 1, the failure at the test file's own line.
func TestHosterTest(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sites")
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "..", "examples", "sites"))); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"test", root}, nil, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "ok   example.com/arena/_tests/arena.test.ts: chat is heard by everyone") ||
		!strings.HasSuffix(out.String(), "\n6 passed, 0 failed\n") {
		t.Fatalf("stdout:\n%s", out.String())
	}

	bad := filepath.Join(root, "example.com", "arena", "_tests", "bad.test.js")
	os.WriteFile(bad, []byte(`test("a coin is worth two", () => {
  game.advance(0);
  const coin = Object.values(game.entities)[0];
  assert.equal(coin.value, 2);
});
`), 0o644)
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"test", root}, nil, &out, &errOut); code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, out.String())
	}
	for _, want := range []string{
		"FAIL example.com/arena/_tests/bad.test.js: a coin is worth two (",
		"     example.com/arena/_tests/bad.test.js:4:15: expected 2, got 1\n",
		"\n6 passed, 1 failed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	errOut.Reset()
	if code := Main([]string{"test", "--json", root}, nil, &out, &errOut); code != ExitFailed {
		t.Fatalf("--json: exit %d, want 1", code)
	}
	var rep struct {
		Results []struct {
			File, Name, Failure, Where string
			Passed                     bool
		}
		Passed, Failed, Games int
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("--json does not parse: %v\n%s", err, out.String())
	}
	if rep.Passed != 6 || rep.Failed != 1 || rep.Games != 1 || len(rep.Results) != 7 {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(errOut.String(), "FAIL example.com/arena/_tests/bad.test.js") || strings.Contains(errOut.String(), "ok   ") {
		t.Fatalf("stderr with --json:\n%s", errOut.String())
	}
}

// TestHosterTestRooms runs a game's _tests file through hoster test: a
// room, a lock turning a player away, a drop, a resume, the grace running
// out, and a kick, all in the real runtime on the virtual clock.
func TestHosterTestRooms(t *testing.T) {
	root := t.TempDir()
	game := filepath.Join(root, "a.com", "rooms")
	for rel, body := range map[string]string{
		"hoster-game.json":            `{"tickRate": 20, "sendRate": 10, "capacity": 4, "origins": ["*"], "resumeGrace": 5}`,
		"hoster-player/fields.json":   `{"name": "string"}`,
		"hoster-player/join.js":       `export default function (i, p, params) { p.name = params.name; if (params.name === "ada") i.lock(); }`,
		"hoster-player/disconnect.js": `export default function (i, p) { i.log("disconnect " + p.name); }`,
		"hoster-player/leave.js":      `export default function (i, p) { i.log("leave " + p.name); }`,
		"hoster-commands/kick/run.js": `export default function (i, p) { for (const id in i.players) if (id !== p.id) i.kick(i.players[id], "out"); }`,
		"_tests/rooms.test.js": `test("rooms, drops and kicks", () => {
  const ada = game.join({ name: "ada", room: "abc" });
  assert(ada.instance.locked);
  assert.deepEqual(game.join({ name: "eve", room: "abc" }).messages.at(-1), { t: "close", code: 1013, reason: "room abc is locked" });
  const bob = game.join({ name: "bob" }), carol = game.join({ name: "carol" });
  assert.equal(bob.instance, carol.instance);
  assert.equal(game.instances.length, 2);
  bob.drop();
  game.advance(0.05);
  assert.equal(bob.instance.players[bob.id].connected, false);
  bob.resume();
  assert.equal(bob.instance.players[bob.id].connected, true);
  bob.drop();
  game.advance(5.1);
  assert(game.logs.includes("leave bob"));
  assert(!carol.sees(bob.id));
  const dave = game.join({ name: "dave" });
  carol.send("kick", {});
  game.advance(0.1);
  assert.deepEqual(dave.messages.at(-1), { t: "close", code: 4000, reason: "out" });
  assert.deepEqual(Object.keys(game.instances[1].players), [carol.id]);
});
`,
	} {
		p := filepath.Join(game, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"test", root}, nil, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "ok   a.com/rooms/_tests/rooms.test.js: rooms, drops and kicks") ||
		!strings.HasSuffix(out.String(), "\n1 passed, 0 failed\n") {
		t.Fatalf("stdout:\n%s", out.String())
	}
}
