package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/tools"
)

func pullServer(t *testing.T, e *cliEnv, variant api.Variant) string {
	s := contracttest.Start(t, contracttest.Options{Variant: variant, Token: testToken, Routes: func(s *contracttest.Env) map[string]http.Handler {
		return tools.Routes(tools.Options{LogsRoot: s.LogsRoot, Variant: s.Variant})
	}})
	logs := s.LogsRoot
	e.writeConfig(map[string]string{"hoster-config-server": s.URL, "hoster-config-apiToken": testToken})
	for rel, body := range map[string]string{
		"web-logs/access.log":            "a\n",
		"server-logs/cpu-2026-11-22.log": "c\n",
		"hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl": "{}\n",
	} {
		p := filepath.Join(logs, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	return logs
}

func TestPullCommands(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	pullServer(t, e, api.Variant1)
	out, errOut, code := e.run(false, "--json", "pull")
	var rep struct {
		Fetched, Unchanged int
		Failures           []any
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Fetched != 3 {
		t.Fatalf("pull: exit %d %s %s", code, out, errOut)
	}
	for _, p := range []string{"hoster-mirror/web-logs/access.log", "hoster-mirror/server-logs/cpu-2026-11-22.log",
		"hoster-mirror/hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl"} {
		if _, err := os.Stat(filepath.Join(e.dir, p)); err != nil {
			t.Errorf("missing %s", p)
		}
	}
	_, errOut, code = e.run(false, "pull-stats", "elsewhere")
	if code != 0 || !strings.Contains(errOut, "fetched server-logs") && !strings.Contains(errOut, "cpu-2026-11-22.log") {
		t.Fatalf("pull-stats DIR: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "elsewhere", "cpu-2026-11-22.log")); err != nil {
		t.Fatal("pull-stats DIR did not write into DIR")
	}
}

func TestPullVariant2(t *testing.T) {
	e := newCLIEnv(t, api.Variant2)
	pullServer(t, e, api.Variant2)
	_, errOut, code := e.run(false, "pull-gamelogs")
	if code != ExitFailed || !strings.Contains(errOut, "no game-log routes") {
		t.Fatalf("pull-gamelogs on variant 2: exit %d\n%s", code, errOut)
	}
	_, errOut, code = e.run(false, "pull")
	if code != 0 || !strings.Contains(errOut, "note: game logs skipped") {
		t.Fatalf("pull on variant 2: exit %d\n%s", code, errOut)
	}
}

// A file that cannot be mirrored is printed once, naming it once.
func TestPullFailurePrintedOnce(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	pullServer(t, e, api.Variant1)
	// A folder where the day-file's copy goes.
	os.MkdirAll(filepath.Join(e.dir, "hoster-mirror/server-logs/cpu-2026-11-22.log/x"), 0o755)
	_, errOut, code := e.run(false, "pull")
	if code != ExitFailed {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if n := strings.Count(errOut, "cpu-2026-11-22.log"); n != 1 {
		t.Errorf("the failed file is named %d times:\n%s", n, errOut)
	}
}

// A game-log path holding a newline is refused, named on one line (no
// forged line in the output, no folder named with a newline); the rest is
// mirrored and the run exits 1. A rotated log that shrank on the server is
// mirrored with the archived copy kept beside it, which even -q says.
func TestPullOddNamesAndKeptCopies(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	logs := pullServer(t, e, api.Variant1)
	odd := filepath.Join(logs, "hoster-logs/a.com/g\nfetched evil.com/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl")
	os.MkdirAll(filepath.Dir(odd), 0o755)
	os.WriteFile(odd, []byte("{}\n"), 0o644)
	rotated := filepath.Join(logs, "web-logs/access-2026-11-20T10-00-00.000.log")
	os.WriteFile(rotated, []byte("a long rotated log\n"), 0o644)

	_, errOut, code := e.run(false, "pull")
	if code != ExitFailed || !strings.Contains(errOut, `failed: fetch a.com/g\nfetched evil.com/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl: the server listed it, but the name holds a control character; skipped`) {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, line := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(line, "fetched evil") {
			t.Errorf("a forged line in the output: %q", line)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "hoster-mirror/hoster-logs/a.com/g\nfetched evil.com")); err == nil {
		t.Error("a folder named with a newline was made")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "hoster-mirror/hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl")); err != nil {
		t.Error("the rest was not mirrored")
	}

	os.RemoveAll(filepath.Join(logs, "hoster-logs/a.com/g\nfetched evil.com"))
	fi, _ := os.Stat(rotated)
	os.WriteFile(rotated, []byte("short\n"), 0o644)
	os.Chtimes(rotated, fi.ModTime(), fi.ModTime())
	_, errOut, code = e.run(false, "-q", "pull")
	name := "access-" + strconv.FormatInt(fi.ModTime().UnixMilli(), 10) + ".log"
	want := "kept: " + name + ": the server's copy, 6 bytes, does not begin with the 19 bytes archived; the archived copy is now " +
		name + ".kept-1, and the server's copy in its place\n"
	if code != 0 || errOut != want {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "hoster-mirror/web-logs", name+".kept-1")); string(b) != "a long rotated log\n" {
		t.Fatalf("the archived copy holds %q", b)
	}
}
