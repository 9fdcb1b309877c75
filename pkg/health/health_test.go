package health

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

func TestSnapshotOnThisHost(t *testing.T) {
	h := Snapshot(context.Background())
	if h.TS == 0 || h.Hostname == "" || h.Memory.Total == 0 || len(h.CPU.Cores) == 0 {
		t.Fatalf("snapshot lacks basics: %+v", h)
	}
	b, _ := json.Marshal(h)
	var back api.Health
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
}

func TestAppendLinesAndDays(t *testing.T) {
	root := t.TempDir()
	s := &Sampler{LogsRoot: root}
	day1 := time.Date(2026, 11, 21, 23, 59, 50, 0, time.UTC).Unix()
	full := api.Health{TS: day1, Load: [3]float64{1, 2, 3}, CPU: api.CPUInfo{Model: "m", Cores: []api.CPUTime{{User: 1}}},
		Memory: api.MemoryInfo{Total: 10, Used: 4}, Disk: &api.DiskInfo{Path: "/", Total: 9},
		DiskIO: &api.DiskIOInfo{ReadBytes: 5}, NetIO: &api.NetIOInfo{RxBytes: 6}}
	if err := s.Append(full); err != nil {
		t.Fatal(err)
	}
	// The next sample is past midnight UTC, and this host cannot report IO.
	partial := full
	partial.TS = day1 + 15
	partial.DiskIO, partial.NetIO = nil, nil
	s.Append(partial)

	read := func(name string) []string {
		b, _ := os.ReadFile(filepath.Join(root, "server-logs", name))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	for typ, want := range map[string]string{
		"cpu":    `{"ts":` + itoa(day1) + `,"load":[1,2,3],"model":"m","cores":[{"user":1,"nice":0,"sys":0,"idle":0,"irq":0}]}`,
		"memory": `{"ts":` + itoa(day1) + `,"total":10,"used":4,"available":0,"free":0}`,
		"disk":   `{"ts":` + itoa(day1) + `,"path":"/","total":9,"used":0,"free":0}`,
		"diskio": `{"ts":` + itoa(day1) + `,"readBytes":5,"writeBytes":0}`,
		"netio":  `{"ts":` + itoa(day1) + `,"rxBytes":6,"txBytes":0}`,
	} {
		lines := read(typ + "-2026-11-21.log")
		if len(lines) != 1 || lines[0] != want {
			t.Errorf("%s day 1: %q, want %q", typ, lines, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "server-logs", "diskio-2026-11-22.log")); err == nil {
		t.Error("a metric the host cannot report must have no line")
	}
	if lines := read("cpu-2026-11-22.log"); len(lines) != 1 {
		t.Errorf("the sample past midnight UTC must start the next day-file: %v", lines)
	}
}

func TestPrune(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	touch := func(rel string) string {
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
		return p
	}
	keep := []string{
		touch("server-logs/cpu-2026-09-23.log"), // 60 days back: kept
		touch("server-logs/cpu-2026-11-22.log"),
		touch("server-logs/notes.txt"),
		touch("hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-10-23-12.jsonl"),
		touch("hoster-logs/a.com/g/hoster-processes/0123456789ab/snapshot-2026-11-22-11.jsonl"),
	}
	gone := []string{
		touch("server-logs/cpu-2026-09-21.log"),
		touch("server-logs/netio-2025-01-01.log"),
		touch("hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-10-22-10.jsonl"),
		touch("hoster-logs/b.com/h/hoster-processes/ffffffffffff/snapshot-2026-01-01-00.jsonl"),
	}
	if err := Prune(root, now); err != nil {
		t.Fatal(err)
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("pruned %s", p)
		}
	}
	for _, p := range gone {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("kept %s", p)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
