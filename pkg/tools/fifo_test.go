//go:build unix

package tools

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
)

// A fifo where a log file goes is no file: its route and the batch
// download answer as for an absent one, at once, where opening it to read
// would wait for a writer that never comes.
func TestAFifoIsNoFile(t *testing.T) {
	e := start(t, api.Variant1)
	gl := "a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-09.jsonl"
	for _, p := range []string{"web-logs/access.log", "server-logs/cpu-2026-11-22.log", "hoster-logs/" + gl} {
		os.MkdirAll(filepath.Dir(filepath.Join(e.logs, p)), 0o755)
		if err := syscall.Mkfifo(filepath.Join(e.logs, p), 0o644); err != nil {
			t.Skip("no fifo here:", err)
		}
	}
	for _, path := range []string{"/api/v1/logs/file?which=active", "/api/v1/stats/file?name=cpu-2026-11-22.log", "/api/v1/gamelogs/file?path=" + gl} {
		if resp, body := e.get(t, path, ""); resp.StatusCode != 200 || body != "" {
			t.Errorf("%s: %d %q, want an empty 200", path, resp.StatusCode, body)
		}
	}
	resp, b := e.post(t, api.FetchRequest{Files: []api.FetchFile{
		{Route: api.PathGameLogsFile, Path: gl},
		{Route: api.PathLogsFile, Which: api.WhichActive},
		{Route: api.PathStatsFile, Name: "cpu-2026-11-22.log"},
	}})
	if resp.StatusCode != 200 {
		t.Fatalf("batch download: %d %s", resp.StatusCode, b)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	for i := range 3 {
		h, err := tr.Next()
		if err != nil || h.Size != 0 {
			t.Fatalf("entry %d: %v %v, want an empty one", i, h, err)
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more entries: %v", err)
	}
}
