package tools

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// plantGameLogs plants a month of hour files (both families) for each of
// games games, as bench/genlogs does, and returns the logs root.
func plantGameLogs(b *testing.B, games int) string {
	b.Helper()
	root := b.TempDir()
	start := time.Date(2026, 10, 28, 0, 0, 0, 0, time.UTC)
	for g := range games {
		dir := filepath.Join(root, api.GameLogsDir, fmt.Sprintf("game%d.example.com", g), "arena", api.ProcessesDir, "000000abc000")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for h := range 30 * 24 {
			for _, family := range []string{layout.GameLogStats, layout.GameLogSnapshot} {
				if family == layout.GameLogSnapshot && h%24 != 0 {
					continue
				}
				name := layout.GameLogFileName(family, start.Add(time.Duration(h)*time.Hour))
				if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return root
}

// BenchmarkGameLogListing is the server's cost of the game-log listing
// of 10 games' month (7,500 files): a hoster pull asks it every run.
func BenchmarkGameLogListing(b *testing.B) {
	h := &handlers{o: Options{LogsRoot: plantGameLogs(b, 10)}}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	cpu := cpuTime()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.gameLogs(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
		b.SetBytes(int64(w.Body.Len()))
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process used so far, in ns: on a machine
// others share, what the listing costs, as its wall time is not.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
