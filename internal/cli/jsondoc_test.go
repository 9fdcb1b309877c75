package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
)

// jsonDocument is what every --json run prints.
type jsonDocument struct {
	ExitCode *int
	Exit     string
	Error    string
	Failures []struct {
		Op, Path, Error string
		Line            int
	}
}

// TestJSONWhateverHappens runs every command that takes --json into each
// way it can fail, against a real server (a wrong token, a closed port, an
// API it does not speak) and real trees: stdout is always one JSON
// document with the exit status, what it means, and the failures, each
// saying what, where and why.
func TestJSONWhateverHappens(t *testing.T) {
	e := newCLIEnv(t, api.Variant2)
	good := map[string]string{"hoster-config-server": e.url, "hoster-config-apiToken": testToken}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"api": %d}`, api.Version+1)
	}))
	defer other.Close()
	tick := "export default function (i, dt) {}"
	broken := "export default function (i, dt) {\n  (\n}\n"
	failingTest := "test(\"one is two\", () => {\n  assert.equal(1, 2);\n});\n"
	e.game("arena", map[string]string{"hoster-instance/tick.js": tick})

	for _, tc := range []struct {
		name   string
		setup  func()
		args   []string
		code   int
		op     string // of a failure
		path   string // of that failure (a suffix)
		line   int    // of that failure, when it has one
		reason string // in that failure's error
	}{
		{"sync, wrong token", func() {
			e.writeConfig(map[string]string{"hoster-config-server": e.url, "hoster-config-apiToken": strings.Repeat("0", 64)})
		}, []string{"sync", "sites"}, ExitFailed, "connect", e.url, 0, "token may be wrong"},
		{"sync, dead server", func() {
			e.writeConfig(map[string]string{"hoster-config-server": closed.URL, "hoster-config-apiToken": testToken})
		}, []string{"sync", "sites"}, ExitFailed, "", "", 0, "refused"},
		{"sync, no server configured", func() { os.Remove(filepath.Join(e.dir, "hoster.json")) },
			[]string{"sync", "sites"}, ExitUsage, "configure", "", 0, "no server configured"},
		{"sync, a wrong key in hoster.json", func() {
			os.WriteFile(filepath.Join(e.dir, "hoster.json"), []byte(`{"hoster-config-Server": "x"}`), 0o600)
		}, []string{"sync", "sites"}, ExitUsage, "configure", "hoster.json", 0, `unknown key "hoster-config-Server"`},
		{"sync, another API", func() {
			e.writeConfig(map[string]string{"hoster-config-server": other.URL, "hoster-config-apiToken": testToken})
		}, []string{"sync", "sites"}, ExitVersion, "connect", other.URL, 0, "upgrade hoster"},
		{"sync, a game that does not generate", func() {
			e.writeConfig(good)
			e.game("arena", map[string]string{"hoster-instance/tick.js": broken})
		}, []string{"sync", "sites"}, ExitFailed, "generate", "example.com/arena/hoster-instance/tick.js", 3, "Unexpected"},
		{"sync --watch", nil, []string{"sync", "--watch", "sites"}, ExitUsage, "usage", "", 0, "--watch and --json"},
		{"gen, a game that does not generate", nil,
			[]string{"gen", "sites"}, ExitFailed, "generate", "example.com/arena/hoster-instance/tick.js", 3, "Unexpected"},
		{"gen, no ROOT", nil, []string{"gen", "missing"}, ExitUsage, "read", "missing", 0, "not a directory"},
		{"test, a game that does not generate", func() {
			e.game("arena", map[string]string{"hoster-instance/tick.js": broken, "_tests/a.test.js": failingTest})
		}, []string{"test", "sites"}, ExitFailed, "generate", "example.com/arena/hoster-instance/tick.js", 3, "Unexpected"},
		{"test, a failing test", func() { e.game("arena", map[string]string{"hoster-instance/tick.js": tick}) },
			[]string{"test", "sites"}, ExitFailed, "test", "example.com/arena/_tests/a.test.js", 2, "one is two: expected 2, got 1"},
		{"pull, wrong token", func() {
			e.writeConfig(map[string]string{"hoster-config-server": e.url, "hoster-config-apiToken": strings.Repeat("0", 64)})
		}, []string{"pull"}, ExitFailed, "pull", "hoster-mirror/web-logs", 0, "token may be wrong"},
		{"pull-gamelogs, a server without them", func() { pullServer(t, e, api.Variant2) },
			[]string{"pull-gamelogs", "logs"}, ExitFailed, "pull", "logs", 0, "no game-log routes"},
		{"version, dead server", func() {
			e.writeConfig(map[string]string{"hoster-config-server": closed.URL, "hoster-config-apiToken": testToken})
		}, []string{"version"}, ExitFailed, "connect", closed.URL, 0, "refused"},
		{"version, another API", func() {
			e.writeConfig(map[string]string{"hoster-config-server": other.URL, "hoster-config-apiToken": testToken})
		}, []string{"version"}, ExitVersion, "connect", other.URL, 0, "upgrade hoster"},
		{"dev", nil, []string{"dev", "sites"}, ExitUsage, "usage", "", 0, "dev has no --json"},
		{"an unknown flag", nil, []string{"sync", "--nope", "sites"}, ExitUsage, "usage", "", 0, "unknown flag: --nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			out, errOut, code := e.run(false, append([]string{"--json"}, tc.args...)...)
			var doc jsonDocument
			dec := json.NewDecoder(strings.NewReader(out))
			if err := dec.Decode(&doc); err != nil || dec.More() {
				t.Fatalf("stdout is not one JSON document (%v):\n%s\nstderr:\n%s", err, out, errOut)
			}
			if code != tc.code || doc.ExitCode == nil || *doc.ExitCode != code || doc.Exit == "" {
				t.Fatalf("exit %d, want %d; the document says %v %q\n%s", code, tc.code, doc.ExitCode, doc.Exit, out)
			}
			for _, f := range doc.Failures {
				if (tc.op == "" || f.Op == tc.op) && strings.HasSuffix(f.Path, tc.path) && f.Line == tc.line && strings.Contains(f.Error, tc.reason) {
					return
				}
			}
			t.Fatalf("no failure {op %q, path …%q, line %d, error …%q}:\n%s", tc.op, tc.path, tc.line, tc.reason, out)
		})
	}
}

// A run that succeeds says so the same way: exit 0, "done", no failures.
func TestJSONOnSuccess(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"hoster-instance/tick.js": "export default function (i, dt) {}"})
	for _, args := range [][]string{{"gen", "sites"}, {"sync", "sites"}, {"version"}, {"test", "sites"}} {
		out, errOut, code := e.run(false, append([]string{"--json"}, args...)...)
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK {
			t.Fatalf("%v: exit %d, %v\n%s\n%s", args, code, err, out, errOut)
		}
		if string(doc["exitCode"]) != "0" || string(doc["exit"]) != `"done"` || string(doc["failures"]) != "[]" {
			t.Errorf("%v: %s", args, out)
		}
	}
}
