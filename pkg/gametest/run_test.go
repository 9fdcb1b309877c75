package gametest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// counter is a tiny game for the runner's own tests: each player's "add"
// command adds to a total at the next tick. (hoster test's tests run the
// real runtime; see internal/cli.)
type counter struct {
	total   int
	clock   time.Duration
	players []*counterPlayer
	queued  []int
	logs    []string
}

type counterPlayer struct {
	g    *counter
	id   string
	msgs []json.RawMessage
}

func (c *counter) Join(params map[string]string) (Player, error) {
	p := &counterPlayer{g: c, id: fmt.Sprintf("p%d", len(c.players)+1)}
	c.players = append(c.players, p)
	p.msgs = append(p.msgs, json.RawMessage(`{"t":"welcome","player":"`+p.id+`"}`))
	c.logs = append(c.logs, "joined "+params["name"])
	return p, nil
}

func (c *counter) Advance(d time.Duration) error {
	c.clock += d
	for _, n := range c.queued {
		c.total += n
	}
	c.queued = nil
	return nil
}

func (c *counter) State() (json.RawMessage, error) {
	return json.RawMessage(fmt.Sprintf(`{"total":%d,"seconds":%g}`, c.total, c.clock.Seconds())), nil
}
func (c *counter) Players() (json.RawMessage, error)  { return json.RawMessage(`{}`), nil }
func (c *counter) Entities() (json.RawMessage, error) { return json.RawMessage(`{}`), nil }
func (c *counter) Logs() []string                     { return c.logs }
func (c *counter) Instances() []Instance              { return nil }
func (c *counter) Close()                             {}

func (p *counterPlayer) ID() string { return p.id }
func (p *counterPlayer) Send(cmd string, args json.RawMessage) error {
	var a struct{ N int }
	if cmd != "add" || json.Unmarshal(args, &a) != nil {
		p.msgs = append(p.msgs, json.RawMessage(`{"t":"error","error":"unknown command"}`))
		return nil
	}
	p.g.queued = append(p.g.queued, a.N)
	return nil
}
func (p *counterPlayer) Messages() []json.RawMessage { return p.msgs }
func (p *counterPlayer) Sees(id string) bool         { return id == p.id }
func (p *counterPlayer) Leave() error                { return nil }
func (p *counterPlayer) Drop() error                 { return nil }
func (p *counterPlayer) Resume() error               { return nil }
func (p *counterPlayer) Instance() Instance          { return nil }

func TestRunGame(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "a.com", "count", Folder)
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(root, "a.com", "count", "lib"), 0o755)
	os.WriteFile(filepath.Join(root, "a.com", "count", "lib", "n.ts"), []byte("export const TWO: number = 2;\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "add.test.ts"), []byte(`import { TWO } from "../lib/n";

test("adding adds at the next tick", () => {
  const a = game.join({ name: "a" });
  a.send("add", { n: TWO });
  assert.equal(game.state.total, 0);
  game.advance(0.05);
  assert.equal(game.state.total, 2);
  assert(a.sees(a.id));
  assert.deepEqual(game.logs, ["joined a"]);
});

test("a wrong total fails where it is checked", () => {
  const a = game.join({});
  a.send("add", { n: 1 });
  game.advance(1);
  assert.equal(game.state.total, 3);
});

test("a bad command is answered", () => {
  const a = game.join({});
  a.send("nope", {});
  assert.deepEqual(a.messages.map(m => m.t), ["welcome", "error"]);
});

test("a throw fails the test", () => {
  undefinedFunction();
});
`), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.test.js"), []byte("test(\"x\", () => {\n  (\n});\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("not a test"), 0o644)

	var out strings.Builder
	sum, err := RunGame(root, "a.com/count", func(string) (Game, error) { return &counter{}, nil }, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"ok   a.com/count/_tests/add.test.ts: adding adds at the next tick (",
		"FAIL a.com/count/_tests/add.test.ts: a wrong total fails where it is checked (",
		"     a.com/count/_tests/add.test.ts:17:15: expected 3, got 1\n",
		"ok   a.com/count/_tests/add.test.ts: a bad command is answered (",
		"FAIL a.com/count/_tests/add.test.ts: a throw fails the test (",
		"     a.com/count/_tests/add.test.ts:27:20: ReferenceError: undefinedFunction is not defined\n",
		"FAIL a.com/count/_tests/broken.test.js: (loading the file) (",
		"     a.com/count/_tests/broken.test.js:3:1: Unexpected \"}\"\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if sum.Passed != 2 || sum.Failed != 3 {
		t.Errorf("passed %d, failed %d; want 2 and 3", sum.Passed, sum.Failed)
	}
}
