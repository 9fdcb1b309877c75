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
