package tools

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

// post sends a batch download request with the token.
func (e *env) post(t *testing.T, req api.FetchRequest) (*http.Response, []byte) {
	t.Helper()
	body, _ := json.Marshal(req)
	r, _ := http.NewRequest("POST", e.url+api.ToolsPath(api.Version, api.PathFilesBatch), bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// The batch download sends each file as its own route would, in order,
// entry i named i; an absent or unknown one is an empty entry.
func TestBatchDownload(t *testing.T) {
	e := start(t, api.Variant1)
	plant(t, e.logs, "web-logs/access.log", "active\n", time.Time{})
	plant(t, e.logs, "server-logs/cpu-2026-11-22.log", "cpu\n", time.Time{})
	gl := "a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-09.jsonl"
	plant(t, e.logs, "hoster-logs/"+gl, "{}\n", time.Time{})
	resp, b := e.post(t, api.FetchRequest{Files: []api.FetchFile{
		{Route: api.PathGameLogsFile, Path: gl},
		{Route: api.PathLogsFile, Which: api.WhichActive},
		{Route: api.PathStatsFile, Name: "cpu-2026-11-22.log"},
		{Route: api.PathStatsFile, Name: "cpu-2026-11-23.log"}, // absent
		{Route: api.PathLogsFile, Which: "12345"},              // unknown
	}})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-tar" {
		t.Fatalf("answer %d %s", resp.StatusCode, b)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	for i, want := range []string{"{}\n", "active\n", "cpu\n", "", ""} {
		h, err := tr.Next()
		if err != nil || h.Name != fmt.Sprint(i) {
			t.Fatalf("entry %d: %v %v", i, h, err)
		}
		if got, _ := io.ReadAll(tr); string(got) != want {
			t.Errorf("entry %d: %q, want %q", i, got, want)
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more entries: %v", err)
	}
}

// A request the batch download does not take is refused as a whole.
func TestBatchDownloadRefuses(t *testing.T) {
	e := start(t, api.Variant2)
	many := make([]api.FetchFile, api.FetchMaxFiles+1)
	for i := range many {
		many[i] = api.FetchFile{Route: api.PathLogsFile, Which: api.WhichActive}
	}
	for name, req := range map[string]api.FetchRequest{
		"too many files":       {Files: many},
		"another route":        {Files: []api.FetchFile{{Route: api.PathStats}}},
		"game logs, variant 2": {Files: []api.FetchFile{{Route: api.PathGameLogsFile, Path: "a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-09.jsonl"}}},
		"two names for one":    {Files: []api.FetchFile{{Route: api.PathStatsFile, Name: "cpu-2026-11-22.log", Path: "x"}}},
	} {
		resp, b := e.post(t, req)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "error") {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
	}
}

// A batch entry is what the file's own route sends, whatever stands at its
// name: a symlink to a file of the same folder is followed, one leading
// out of the logs root, a folder, and a fifo are empty entries.
func TestBatchEntryIsWhatItsRouteSends(t *testing.T) {
	e := start(t, api.Variant1)
	dir := "a.com/g/hoster-processes/0123456789ab/"
	name := func(h int) string { return fmt.Sprintf("%sstats-2026-11-22-%02d.jsonl", dir, h) }
	plant(t, e.logs, "hoster-logs/"+name(0), "{\"h\":0}\n", time.Time{})
	folder := filepath.Join(e.logs, "hoster-logs", filepath.FromSlash(dir))
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret\n"), 0o644)
	os.Symlink("stats-2026-11-22-00.jsonl", filepath.Join(folder, "stats-2026-11-22-01.jsonl"))
	os.Symlink(outside, filepath.Join(folder, "stats-2026-11-22-02.jsonl"))
	os.Mkdir(filepath.Join(folder, "stats-2026-11-22-03.jsonl"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(folder, "stats-2026-11-22-04.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []api.FetchFile
	var want []string
	for h := range 5 {
		files = append(files, api.FetchFile{Route: api.PathGameLogsFile, Path: name(h)})
		_, body := e.get(t, api.ToolsPath(api.Version, api.PathGameLogsFile)+"?path="+name(h), "")
		want = append(want, body)
	}
	if want[1] != "{\"h\":0}\n" || want[2] != "" {
		t.Fatalf("the route sends %q", want)
	}
	resp, b := e.post(t, api.FetchRequest{Files: files})
	if resp.StatusCode != 200 {
		t.Fatalf("answer %d %s", resp.StatusCode, b)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	for i := range files {
		if _, err := tr.Next(); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if got, _ := io.ReadAll(tr); string(got) != want[i] {
			t.Errorf("entry %d: %q, its route sends %q", i, got, want[i])
		}
	}
}
