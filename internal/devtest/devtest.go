// Package devtest runs hoster dev inside a test, for the tests of the
// packages that drive it from outside (the CLI, the integration tests).
package devtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/dev"
)

// Start runs hoster dev on root, on a free port, until the end of the test:
// then it stops it, fails the test if dev.Run returned an error, and logs
// dev's terminal if the test failed. It returns what dev printed so far,
// growing as it runs.
func Start(t testing.TB, root string) (out, log *waitbuf.Buffer) {
	t.Helper()
	out, log = waitbuf.New(), waitbuf.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dev.Run(ctx, dev.Options{Root: root, Port: 0, Out: out, Log: log}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev: %v", err)
		}
		if t.Failed() {
			t.Logf("hoster dev's terminal:\n%s%s", out.String(), log.String())
		}
	})
	return out, log
}

// URL waits for the line hoster dev prints for game ("example.com/tag")
// and returns the URL on it; it fails the test if none comes.
func URL(t testing.TB, out *waitbuf.Buffer, game string) string {
	t.Helper()
	var url string
	if !out.Until(func(s string) bool {
		_, u, found := strings.Cut(s, game+"  ")
		if !found {
			return false
		}
		var ok bool
		url, _, ok = strings.Cut(u, "\n")
		return ok
	}, 20*time.Second) { // a hang guard
		t.Fatalf("hoster dev never served %s", game)
	}
	return url
}
