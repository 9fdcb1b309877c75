package layout

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

func TestStatsFileNameRoundTrips(t *testing.T) {
	at := time.Date(2026, 11, 22, 23, 59, 0, 0, time.FixedZone("x", -3600)) // 2026-11-23 in UTC
	for _, typ := range api.StatsTypes {
		name := StatsFileName(typ, at)
		if name != typ+"-2026-11-23.log" {
			t.Fatalf("StatsFileName(%q) = %q", typ, name)
		}
		got, day, ok := ParseStatsFileName(name)
		if !ok || got != typ || !day.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("ParseStatsFileName(%q) = %q %v %v", name, got, day, ok)
		}
	}
	for _, bad := range []string{"cpu-2026-11-23.log.x", "gpu-2026-11-23.log", "cpu-2026-13-01.log", "cpu-2026-1-01.log",
		"cpu-+026-11-23.log", "cpu_2026-11-23.log", "-2026-11-23.log", "cpu-2026-11-23", "../cpu-2026-11-23.log", ""} {
		if _, _, ok := ParseStatsFileName(bad); ok {
			t.Errorf("ParseStatsFileName(%q) accepted it", bad)
		}
	}
}

func TestGameLogNamesRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	for _, family := range []string{GameLogStats, GameLogSnapshot} {
		p := GameLogPath("a.com", "g", "0123456789ab", family, at)
		if p != "a.com/g/hoster-processes/0123456789ab/"+family+"-2026-11-22-10.jsonl" || !IsGameLogPath(p) {
			t.Fatalf("GameLogPath = %q (IsGameLogPath %v)", p, IsGameLogPath(p))
		}
		got, hour, ok := ParseGameLogFileName(filepath.Base(p))
		if !ok || got != family || !hour.Equal(at.Truncate(time.Hour)) {
			t.Errorf("ParseGameLogFileName(%q) = %q %v %v", filepath.Base(p), got, hour, ok)
		}
	}
	for _, bad := range []string{"a.com/g/hoster-processes/0123456789AB/stats-2026-11-22-10.jsonl",
		"a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-24.jsonl",
		"a.com/g/hoster-processes/0123456789ab/trace-2026-11-22-10.jsonl",
		"a.com/_g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl",
		"acom/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl",
		"a.com/g/processes/0123456789ab/stats-2026-11-22-10.jsonl",
		"a.com/g/hoster-processes/0123456789ab/x/stats-2026-11-22-10.jsonl"} {
		if IsGameLogPath(bad) {
			t.Errorf("IsGameLogPath(%q) accepted it", bad)
		}
	}
}

func TestRotatedLogName(t *testing.T) {
	if n := RotatedLogName(1700000000123); n != "access-1700000000123.log" || !IsRotatedLogName(n) {
		t.Fatalf("RotatedLogName = %q", n)
	}
	for _, bad := range []string{"access.log", "access-.log", "access-+1.log", "access-01.log", "access-1.log.x"} {
		if IsRotatedLogName(bad) {
			t.Errorf("IsRotatedLogName(%q) accepted it", bad)
		}
	}
}

// TestGamesTakeNoSymlinkedConfig: a folder whose hoster-game.json is a
// symbolic link is no game, nor is a symbolic link to a game's folder; a
// folder without the file, or under a name that is no domain's, neither.
func TestGamesTakeNoSymlinkedConfig(t *testing.T) {
	root := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	write("a.com/real/" + api.GameConfigFile)
	write("a.com/noconfig/x.js")
	write("nodomain/g/" + api.GameConfigFile)
	write("a.com/_reserved/" + api.GameConfigFile)
	os.MkdirAll(filepath.Join(root, "a.com/linked"), 0o755)
	link("../real/"+api.GameConfigFile, "a.com/linked/"+api.GameConfigFile)
	link("real", "a.com/folderlink")
	games, err := Games(root)
	if err != nil || !slices.Equal(games, []string{"a.com/real"}) {
		t.Fatalf("Games = %v, %v; want [a.com/real]", games, err)
	}
}

func FuzzIsGameLogPath(f *testing.F) {
	for _, p := range []string{"a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", "../x", "a.com/../../x", "/abs", "a.com/g/hoster-processes/0123456789ab/../../../../../etc/passwd"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !IsGameLogPath(p) {
			return
		}
		clean := filepath.Clean("/root/" + p)
		if !strings.HasPrefix(clean, "/root/") || clean != "/root/"+p {
			t.Fatalf("accepted %q, which is not a clean path inside the root", p)
		}
	})
}
