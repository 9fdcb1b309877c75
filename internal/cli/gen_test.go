package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenCommand(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "a.com", "good")
	bad := filepath.Join(root, "a.com", "bad")
	os.MkdirAll(filepath.Join(good, "hoster-instance"), 0o755)
	os.MkdirAll(filepath.Join(bad, "hoster-instance"), 0o755)
	cfg := `{"tickRate": 10, "sendRate": 5, "capacity": 2, "origins": ["*"]}`
	os.WriteFile(filepath.Join(good, "hoster-game.json"), []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(bad, "hoster-game.json"), []byte(cfg), 0o644)
	os.WriteFile(filepath.Join(good, "hoster-instance", "tick.js"), []byte("export default function (i, dt) {}\n"), 0o644)
	os.WriteFile(filepath.Join(bad, "hoster-instance", "tick.js"), []byte("export default function (i, dt) {\n  (\n}\n"), 0o644)

	var out, errOut bytes.Buffer
	code := Main([]string{"gen", root}, nil, &out, &errOut)
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "a.com/bad/hoster-instance/tick.js:3:") || !strings.Contains(errOut.String(), "1 of 2 games") {
		t.Fatalf("stderr:\n%s", errOut.String())
	}
	if _, err := os.Stat(filepath.Join(good, "hoster.server.js")); err != nil {
		t.Fatal("the good game was not generated")
	}
	if _, err := os.Stat(filepath.Join(bad, "hoster.server.js")); err == nil {
		t.Fatal("the bad game got generated files")
	}

	os.RemoveAll(bad)
	errOut.Reset()
	if code := Main([]string{"gen", root}, nil, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if code := Main([]string{"gen", filepath.Join(root, "missing")}, nil, &out, &errOut); code != ExitUsage {
		t.Fatalf("a missing ROOT: exit %d, want 2", code)
	}
	if code := Main([]string{"gen", t.TempDir()}, nil, &out, &errOut); code != ExitFailed {
		t.Fatalf("a ROOT without games: exit %d, want 1", code)
	}
}
