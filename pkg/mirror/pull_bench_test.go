package mirror

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// BenchmarkPullGrowingLog mirrors a 64 MiB active access log, lets it grow by
// 1 MiB, and mirrors again: the second run should move about 1 MiB.
func BenchmarkPullGrowingLog(b *testing.B) {
	e := newPullEnv(b, api.Variant1)
	line := strings.Repeat("x", 1023) + "\n"
	e.appendTo(b, "web-logs/access.log", strings.Repeat(line, 64<<10))
	ctx := context.Background()
	dir := filepath.Join(e.mirror, "web-logs")
	if _, err := PullLogs(ctx, e.c, dir, 4, nil); err != nil {
		b.Fatal(err)
	}
	e.reset()
	var wire int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.appendTo(b, "web-logs/access.log", strings.Repeat(line, 1<<10)) // +1 MiB
		b.StartTimer()
		if s, err := PullLogs(ctx, e.c, dir, 4, nil); err != nil || s.Bytes != 1<<20 {
			b.Fatalf("%+v %v", s, err)
		}
		_, n := e.reset()
		wire += n
	}
	b.ReportMetric(float64(wire)/float64(b.N), "wire-bytes/op")
}

// BenchmarkPullWholeVsCurl downloads a 64 MiB file whole with the client
// and with curl from the same server, on loopback.
func BenchmarkPullWholeVsCurl(b *testing.B) {
	e := newPullEnv(b, api.Variant1)
	e.appendTo(b, "server-logs/cpu-2026-11-21.log", strings.Repeat(strings.Repeat("y", 1023)+"\n", 64<<10))
	e.appendTo(b, "server-logs/cpu-2026-11-22.log", "newest\n")
	ctx := context.Background()
	b.Run("hoster", func(b *testing.B) {
		b.SetBytes(64 << 20)
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			if s, err := PullStats(ctx, e.c, dir, 4, nil); err != nil || s.Fetched != 2 {
				b.Fatalf("%+v %v", s, err)
			}
		}
	})
	b.Run("curl", func(b *testing.B) {
		curl, err := exec.LookPath("curl")
		if err != nil {
			b.Skip("no curl")
		}
		b.SetBytes(64 << 20)
		for i := 0; i < b.N; i++ {
			out := filepath.Join(b.TempDir(), "f")
			cmd := exec.Command(curl, "-sf", "-H", "Authorization: Bearer "+token, "-o", out,
				e.urlFor("/api/v1/stats/file?name=cpu-2026-11-21.log"))
			if o, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, o)
			}
			if fi, _ := os.Stat(out); fi.Size() != 64<<20 {
				b.Fatal("short")
			}
		}
	})
}

// BenchmarkPullNoop pulls the game logs of 10 games' month (7,440 hour
// files, 10 folders) into a mirror that holds them all already: what an
// hourly cron run costs the client and the server, nothing fetched (the
// listing, read as it streams in; each local folder read, its files
// stat-ed). cpu-ns/op is the process's CPU time an op (client and
// server both: they share it), which a machine others share does not
// blur as it blurs ns/op.
func BenchmarkPullNoop(b *testing.B) {
	e := newPullEnv(b, api.Variant1)
	e.gameMonth(b, "{}\n")
	ctx := context.Background()
	dir := filepath.Join(e.mirror, "hoster-logs")
	if s, err := PullGameLogs(ctx, e.c, dir, 8, nil); err != nil || s.Fetched != 7440 {
		b.Fatalf("%+v %v", s, err)
	}
	cpu := cpuTime()
	for b.Loop() {
		if s, err := PullGameLogs(ctx, e.c, dir, 8, nil); err != nil || s.Unchanged != 7440 {
			b.Fatalf("%+v %v", s, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process used so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkPullFirst pulls the game logs of 10 games' month (7,440 hour
// files, 10 folders) into an empty mirror: a first pull's cost for the
// client and the server, each file written (cpu-ns/op as in
// BenchmarkPullNoop).
func BenchmarkPullFirst(b *testing.B) {
	e := newPullEnv(b, api.Variant1)
	e.gameMonth(b, strings.Repeat("{\"players\":3}\n", 250))
	ctx := context.Background()
	if _, err := e.c.Version(ctx); err != nil { // the batch download, as hoster pull asks
		b.Fatal(err)
	}
	cpu := cpuTime()
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "hoster-logs")
		if s, err := PullGameLogs(ctx, e.c, dir, 8, nil); err != nil || s.Fetched != 7440 {
			b.Fatalf("%+v %v", s, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// gameMonth gives the server 10 games' month of hour files (7,440 in 10
// folders), each holding body.
func (e *pullEnv) gameMonth(b *testing.B, body string) {
	start := time.Date(2026, 10, 28, 0, 0, 0, 0, time.UTC)
	for g := range 10 {
		for h := range 31 * 24 {
			e.appendTo(b, "hoster-logs/"+layout.GameLogPath(fmt.Sprintf("game%d.example.com", g), "arena", "000000abc000",
				layout.GameLogStats, start.Add(time.Duration(h)*time.Hour)), body)
		}
	}
}
