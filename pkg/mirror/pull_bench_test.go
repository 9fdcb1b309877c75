package mirror

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
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
