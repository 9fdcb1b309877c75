package servercmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestInit(t *testing.T) {
	dir := t.TempDir()
	o := initOptions{
		HostingRoot: filepath.Join(dir, "srv"), LogsRoot: filepath.Join(dir, "logs"), IP: "127.0.0.1",
		Listen: "127.0.0.1:8787", AskListen: "127.0.0.1:8788", HTTPSPort: 18443, Binary: "/usr/local/bin/hoster-server",
	}
	var out bytes.Buffer
	if err := runInit(o, &out, time.Now()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(o.HostingRoot, "hoster-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	if n := strings.Count(out.String(), token); n != 1 {
		t.Fatalf("the token must be printed exactly once, got %d times:\n%s", n, out.String())
	}
	if !strings.HasPrefix(out.String(), "hoster-server init: ready\n") || !strings.Contains(out.String(), `"hoster-config-server": "https://127.0.0.1:18443"`) {
		t.Fatalf("init's report:\n%s", out.String())
	}
}

func TestInitRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []initOptions{
		{HostingRoot: dir, LogsRoot: dir, IP: "not-an-ip", Listen: "127.0.0.1:1", AskListen: "127.0.0.1:2"},
		{HostingRoot: dir, LogsRoot: dir, IP: "127.0.0.1", Listen: "nope", AskListen: "127.0.0.1:2"},
	} {
		err := runInit(o, &bytes.Buffer{}, time.Now())
		var ue usageError
		if err == nil || !errors.As(err, &ue) {
			t.Errorf("runInit(%+v) = %v, want a usage error", o, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused init must create nothing, found %d entries", len(entries))
	}
}

// init --local, as the operators' guide runs it: everything under
// ./hoster-trial, Caddy on 8880/8443 for 127.0.0.1, the client settings
// written beside the token.
func TestInitLocal(t *testing.T) {
	for _, name := range []string{"hosting-root", "logs-root", "ip", "http-port", "https-port"} {
		t.Setenv(EnvName(name), "")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	var out bytes.Buffer
	cmd := newInitCmd(&out, &out)
	cmd.SetArgs([]string{"--local"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("init --local: %v\n%s", err, out.String())
	}
	for _, f := range []string{"hoster-trial/hosting/Caddyfile", "hoster-trial/hosting/hoster.json", "hoster-trial/hosting/hoster-token", "hoster-trial/logs/web-logs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("init --local did not make %s: %v", f, err)
		}
	}
	if !strings.Contains(out.String(), `"hoster-config-server": "https://127.0.0.1:8443"`) {
		t.Fatalf("init --local's report:\n%s", out.String())
	}
}
