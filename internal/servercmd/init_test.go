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
