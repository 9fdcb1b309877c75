package cli

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/server"
	"github.com/hoster-dev/hoster/pkg/tools"
)

func pullServer(t *testing.T, e *cliEnv, variant api.Variant) string {
	logs := t.TempDir()
	srv, err := server.New(server.Options{GamesRoot: filepath.Join(t.TempDir(), "g"), Token: testToken, Variant: variant,
		Routes: tools.Routes(tools.Options{LogsRoot: logs, Variant: variant})})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	e.writeConfig(map[string]string{"hoster-config-server": ts.URL, "hoster-config-apiToken": testToken})
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
