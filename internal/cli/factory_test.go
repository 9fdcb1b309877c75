package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
)

// Every command that talks to a server takes its client from IO.NewClient,
// built from what the configuration and the flags say: here no server
// exists and nothing is dialled; the factory sees the configuration and
// refuses, and the command says so as a configuration error.
func TestCommandsTakeTheirClientFromTheFactory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("HOSTER_CONFIG_SERVER", "")
	t.Setenv("HOSTER_CONFIG_APITOKEN", "")
	t.Setenv("HOSTER_CONFIG_CERTSHA256", "")
	os.WriteFile(filepath.Join(dir, "hoster.json"), []byte(`{"hoster-config-server": "https://hoster.invalid", "hoster-config-apiToken": "`+testToken+`"}`), 0o600)
	pin := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		args  []string
		conns int
	}{
		{[]string{"sync", "--jobs", "7", "sites"}, 7},
		{[]string{"version"}, 1},
		{[]string{"pull", "mirror"}, pullJobs},
		{[]string{"pull-logs", "logs"}, pullJobs},
		{[]string{"pull-stats", "stats"}, pullJobs},
		{[]string{"pull-gamelogs", "gamelogs"}, pullJobs},
	} {
		os.MkdirAll(filepath.Join(dir, "sites"), 0o755)
		var got []apiclient.ClientConfig
		refuse := func(c apiclient.ClientConfig) (*apiclient.Client, error) {
			got = append(got, c)
			return nil, errors.New("no network in this test")
		}
		var out, errOut bytes.Buffer
		code := run(&IO{Out: &out, ErrOut: &errOut, NewClient: refuse}, append([]string{"--cert-sha256", pin}, tc.args...))
		if code != ExitUsage || !strings.Contains(errOut.String(), "no network in this test") {
			t.Errorf("hoster %v: exit %d\n%s", tc.args, code, errOut.String())
		}
		if len(got) != 1 || got[0].Server != "https://hoster.invalid" || got[0].Token != testToken || got[0].CertSHA256 != pin ||
			got[0].Conns != tc.conns || got[0].Warn == nil {
			t.Errorf("hoster %v asked the factory for %+v", tc.args, got)
		}
	}
}

// A factory that hands the commands a client of the harness's server runs
// them against it whatever server the configuration names: the sync lands
// in the harness's games root.
func TestCommandsRunAgainstTheHarnessThroughTheFactory(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.writeConfig(map[string]string{"hoster-config-server": "https://hoster.invalid", "hoster-config-apiToken": testToken})
	e.game("arena", map[string]string{"a.txt": "a"})
	var out, errOut bytes.Buffer
	t.Chdir(e.dir)
	code := run(&IO{Out: &out, ErrOut: &errOut, NewClient: func(c apiclient.ClientConfig) (*apiclient.Client, error) {
		return e.srv.NewClient(t, c), nil
	}}, []string{"sync", "sites"})
	if code != 0 {
		t.Fatalf("sync through the factory: exit %d\n%s", code, errOut.String())
	}
	if b, err := os.ReadFile(filepath.Join(e.games, "example.com", "arena", "a.txt")); err != nil || string(b) != "a" {
		t.Fatalf("the harness's server has %q, %v", b, err)
	}
}
