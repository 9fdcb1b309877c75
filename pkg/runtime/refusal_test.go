package runtime

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// A socket refused for its Origin is logged with the game, the origin and
// the allowed list, once a minute per game and origin however often the page
// retries.
func TestRefusedOriginsAreLoggedRateLimited(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	var clock sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4)}, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
		o.Now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	})
	refuse := func(origin string) {
		_, resp, err := e.dial(t, "a.example", "/lab", http.Header{"Origin": {origin}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("origin %s: %v %v", origin, err, resp)
		}
	}
	lines := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, "socket refused") {
				out = append(out, l)
			}
		}
		return out
	}
	for range 5 {
		refuse("https://evil.example")
	}
	refuse("http://localhost:3000")
	got := lines()
	if len(got) != 2 {
		t.Fatalf("want one line per origin, got %d:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, want := range []string{"game=a.example/lab", "origin=https://evil.example", "allowed=https://good.example"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("%q lacks %q", got[0], want)
		}
	}
	// A minute on, the next refusal is logged, counting those not logged.
	clock.Lock()
	now = now.Add(refusalEvery)
	clock.Unlock()
	refuse("https://evil.example")
	if got := lines(); len(got) != 3 || !strings.Contains(got[2], "alsoRefused=4") {
		t.Fatalf("after a minute: %s", strings.Join(got, "\n"))
	}
}
