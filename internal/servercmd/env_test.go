package servercmd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestApplyEnv(t *testing.T) {
	env := map[string]string{
		"HOSTER_SERVER_HOSTING_ROOT":    "/from/env",
		"HOSTER_SERVER_LISTEN":          "127.0.0.1:1",
		"HOSTER_SERVER_STATS_INTERVAL":  "30s",
		"HOSTER_SERVER_RELOAD_DEBOUNCE": "",
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	root := fs.String("hosting-root", "/srv/hoster", "")
	listen := fs.String("listen", "127.0.0.1:8787", "")
	stats := fs.Duration("stats-interval", 15*time.Second, "")
	debounce := fs.Duration("reload-debounce", 500*time.Millisecond, "")
	if err := fs.Parse([]string{"--listen", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *root != "/from/env" || *listen != "127.0.0.1:2" || *stats != 30*time.Second || *debounce != 500*time.Millisecond {
		t.Fatalf("got root=%q listen=%q stats=%v debounce=%v: the command line must win, then the environment, then the default", *root, *listen, *stats, *debounce)
	}

	bad := pflag.NewFlagSet("t", pflag.ContinueOnError)
	bad.Duration("stats-interval", time.Second, "")
	err := applyEnv(bad, func(k string) string {
		if k == "HOSTER_SERVER_STATS_INTERVAL" {
			return "secret-ish-garbage"
		}
		return ""
	})
	var ue usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "HOSTER_SERVER_STATS_INTERVAL") || strings.Contains(err.Error(), "secret-ish-garbage") {
		t.Fatalf("bad env value: %v; want a usage error naming the variable and not echoing its value", err)
	}
}
