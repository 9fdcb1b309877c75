package cli

import (
	"bytes"
	"encoding/json"
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

// TestGenSaysWhatItGenerated checks the line per game and the --json summary.
func TestGenSaysWhatItGenerated(t *testing.T) {
	root := t.TempDir()
	game := filepath.Join(root, "a.com", "tag")
	os.MkdirAll(filepath.Join(game, "hoster-commands", "tag"), 0o755)
	os.MkdirAll(filepath.Join(game, "hoster-entities", "crate"), 0o755)
	os.MkdirAll(filepath.Join(game, "hoster-player"), 0o755)
	os.WriteFile(filepath.Join(game, "hoster-game.json"), []byte(`{"tickRate": 10, "sendRate": 5, "capacity": 2, "origins": ["*"]}`), 0o644)
	os.WriteFile(filepath.Join(game, "hoster-commands", "tag", "run.js"), []byte("export default function (i, p, a) {}\n"), 0o644)
	os.WriteFile(filepath.Join(game, "hoster-entities", "crate", "fields.json"), []byte(`{"x": "number"}`), 0o644)
	os.WriteFile(filepath.Join(game, "hoster-player", "join.ts"), []byte("export default function (i: any, p: any) {}\n"), 0o644)

	var out, errOut bytes.Buffer
	if code := Main([]string{"gen", root}, nil, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if got, want := errOut.String(), "generated a.com/tag: 2 hooks, 1 command, 1 entity type\n"; got != want {
		t.Fatalf("stderr %q, want %q", got, want)
	}
	if out.Len() != 0 {
		t.Fatalf("stdout without --json: %q", out.String())
	}

	out.Reset()
	errOut.Reset()
	if code := Main([]string{"gen", "--json", root}, nil, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	var report struct {
		Games []struct {
			Game                         string
			Hooks, Commands, EntityTypes int
			Written                      []string
			Problems                     []any
		}
		Generated, Failed int
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out.String())
	}
	g := report.Games[0]
	if report.Generated != 1 || report.Failed != 0 || g.Game != "a.com/tag" || g.Hooks != 2 || g.Commands != 1 || g.EntityTypes != 1 || len(g.Problems) != 0 {
		t.Fatalf("report %+v", report)
	}
	if errOut.Len() != 0 {
		t.Fatalf("stderr with --json: %q", errOut.String())
	}

	// A problem is in the JSON with its place.
	os.WriteFile(filepath.Join(game, "hoster-player", "fields.json"), []byte("{\n  \"x\": \"number\",\n}\n"), 0o644)
	out.Reset()
	if code := Main([]string{"gen", "--json", root}, nil, &out, &errOut); code != ExitFailed {
		t.Fatalf("exit %d, want 1", code)
	}
	var failed struct {
		Games []struct {
			Problems []struct {
				File         string
				Line, Column int
				Message      string
			}
		}
		Failed int
	}
	if err := json.Unmarshal(out.Bytes(), &failed); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out.String())
	}
	p := failed.Games[0].Problems[0]
	if failed.Failed != 1 || p.File != "a.com/tag/hoster-player/fields.json" || p.Line != 3 || p.Column != 1 {
		t.Fatalf("problems %+v", failed)
	}
}

// TestGenCheck covers --check's exits: 2 with how to get tsc when there is
// none, 1 with tsc's errors at their place when the types are wrong. Either
// way the game is not generated: its hoster.server.js is not written, and a
// previous good one stays exactly as it was.
func TestGenCheck(t *testing.T) {
	tsc := os.Getenv("HOSTER_TSC")
	root := t.TempDir()
	game := filepath.Join(root, "a.com", "tag")
	os.MkdirAll(filepath.Join(game, "hoster-player"), 0o755)
	os.WriteFile(filepath.Join(game, "hoster-game.json"), []byte(`{"tickRate": 10, "sendRate": 5, "capacity": 2, "origins": ["*"]}`), 0o644)
	os.WriteFile(filepath.Join(game, "hoster-player", "fields.json"), []byte(`{"score": "integer"}`), 0o644)
	os.WriteFile(filepath.Join(game, "hoster-player", "join.ts"), []byte("export default function join(instance: Instance, player: Player) {\n  player.score = \"zero\";\n}\n"), 0o644)

	t.Run("no tsc", func(t *testing.T) {
		t.Setenv("HOSTER_TSC", "")
		t.Setenv("PATH", t.TempDir())
		var out, errOut bytes.Buffer
		if code := Main([]string{"gen", "--check", root}, nil, &out, &errOut); code != ExitUsage {
			t.Fatalf("exit %d, want 2\n%s", code, errOut.String())
		}
		if !strings.Contains(errOut.String(), "npm install --save-dev typescript") {
			t.Fatalf("stderr does not say how to get tsc:\n%s", errOut.String())
		}
		if _, err := os.Stat(filepath.Join(game, "hoster.server.js")); err == nil {
			t.Fatal("without a compiler, gen --check still wrote hoster.server.js")
		}
	})
	t.Run("type error", func(t *testing.T) {
		if tsc == "" {
			t.Skip("HOSTER_TSC is not set (make test installs typescript with npm)")
		}
		var out, errOut bytes.Buffer
		if code := Main([]string{"gen", "--check", root}, nil, &out, &errOut); code != ExitFailed {
			t.Fatalf("exit %d, want 1\n%s", code, errOut.String())
		}
		if want := "a.com/tag/hoster-player/join.ts:2:3: TS2322: Type 'string' is not assignable to type 'number'."; !strings.Contains(errOut.String(), want) {
			t.Fatalf("stderr:\n%s\nwant %s", errOut.String(), want)
		}
		server := filepath.Join(game, "hoster.server.js")
		if _, err := os.Stat(server); err == nil || !strings.Contains(errOut.String(), "1 of 1 games have problems and were not generated") {
			t.Fatalf("a game with type errors was generated, or the last line does not say it was not:\n%s", errOut.String())
		}

		// Fixed, it is generated; broken again, its last good files stay.
		join := filepath.Join(game, "hoster-player", "join.ts")
		os.WriteFile(join, []byte("export default function join(instance: Instance, player: Player) {\n  player.score = 0;\n}\n"), 0o644)
		if code := Main([]string{"gen", "--check", root}, nil, &out, &errOut); code != ExitOK {
			t.Fatalf("fixed: exit %d\n%s", code, errOut.String())
		}
		good, err := os.ReadFile(server)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(join, []byte("export default function join(instance: Instance, player: Player) {\n  player.score = \"one\";\n}\n"), 0o644)
		errOut.Reset()
		if code := Main([]string{"gen", "--check", root}, nil, &out, &errOut); code != ExitFailed {
			t.Fatalf("broken again: exit %d, want 1\n%s", code, errOut.String())
		}
		if now, _ := os.ReadFile(server); string(now) != string(good) {
			t.Fatalf("gen --check rewrote hoster.server.js of a game with type errors:\n%s", errOut.String())
		}
	})
}
