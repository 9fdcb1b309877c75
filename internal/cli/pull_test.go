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

// With several servers configured (a fleet's nodes), pull mirrors each
// into a folder of its name, each node's own files there; a single-part
// pull with a DIR writes DIR/<node>.
func TestPullEveryNode(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	servers := map[string]string{}
	for _, name := range []string{"n1", "n2", "n3"} {
		s := contracttest.Start(t, contracttest.Options{Variant: api.Variant1, Token: testToken, Routes: func(s *contracttest.Env) map[string]http.Handler {
			return tools.Routes(tools.Options{LogsRoot: s.LogsRoot, Variant: s.Variant})
		}})
		servers[name] = s.URL
		for rel, body := range map[string]string{
			"web-logs/access.log":            name + " a\n",
			"server-logs/cpu-2026-11-22.log": name + " c\n",
			"hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl": `{"node": "` + name + `"}` + "\n",
		} {
			p := filepath.Join(s.LogsRoot, rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(body), 0o644)
		}
	}
	b, _ := json.Marshal(map[string]any{"hoster-config-servers": servers, "hoster-config-apiToken": testToken})
	os.WriteFile(filepath.Join(e.dir, "hoster.json"), b, 0o600)

	out, errOut, code := e.run(false, "--json", "pull")
	var rep struct {
		Fetched int
		Nodes   map[string]struct{ Fetched int }
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Fetched != 9 || len(rep.Nodes) != 3 || rep.Nodes["n2"].Fetched != 3 {
		t.Fatalf("pull from three nodes: exit %d %s %s", code, out, errOut)
	}
	for _, name := range []string{"n1", "n2", "n3"} {
		for p, want := range map[string]string{
			"web-logs/access.log":            name + " a\n",
			"server-logs/cpu-2026-11-22.log": name + " c\n",
			"hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl": `{"node": "` + name + `"}` + "\n",
		} {
			if got, _ := os.ReadFile(filepath.Join(e.dir, "hoster-mirror", name, p)); string(got) != want {
				t.Errorf("hoster-mirror/%s/%s holds %q, want %q", name, p, got, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "hoster-mirror", "web-logs")); !os.IsNotExist(err) {
		t.Errorf("a pull of several nodes wrote the one-server layout too: %v", err)
	}
	if _, errOut, code := e.run(false, "pull-stats", "elsewhere"); code != 0 {
		t.Fatalf("pull-stats DIR from three nodes: exit %d %s", code, errOut)
	}
	for _, name := range []string{"n1", "n2", "n3"} {
		if _, err := os.Stat(filepath.Join(e.dir, "elsewhere", name, "cpu-2026-11-22.log")); err != nil {
			t.Errorf("pull-stats DIR did not write DIR/%s: %v", name, err)
		}
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

// hoster-config-servers names each node once, by a name that can be a
// folder of the mirror; its environment's and flag's form is
// <node>=<URL>,..., and the file's an object.
func TestServersConfig(t *testing.T) {
	got, err := parseServers(" b=https://b.example , a=http://127.0.0.1:1,")
	if err != nil || len(got) != 2 || got[0] != (node{"a", "http://127.0.0.1:1"}) || got[1].Name != "b" {
		t.Fatalf("parseServers: %v, %v", got, err)
	}
	for _, bad := range []string{"a", "a=", "../x=http://h", "a/b=http://h", ".=http://h", "a=http://h,a=http://i", strings.Repeat("x", 65) + "=http://h"} {
		if _, err := parseServers(bad); err == nil {
			t.Errorf("parseServers(%q) took it", bad)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "hoster.json")
	os.WriteFile(file, []byte(`{"hoster-config-servers": {"n2": "http://b", "n1": "http://a"}}`), 0o600)
	cfg, err := loadConfig(&globals{ConfigFile: file})
	if err != nil || len(cfg.Servers) != 2 || cfg.Servers[0].Name != "n1" || cfg.Server != "http://a" {
		t.Fatalf("from the file: %+v, %v", cfg, err)
	}
	os.WriteFile(file, []byte(`{"hoster-config-servers": ["http://a"]}`), 0o600)
	if _, err := loadConfig(&globals{ConfigFile: file}); err == nil || !strings.Contains(err.Error(), "must be an object") {
		t.Fatalf("a list of servers: %v", err)
	}
}
