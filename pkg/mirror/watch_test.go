package mirror

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// manualQuiet is a debounce that ends only when the test says so.
type manualQuiet struct {
	restarts chan struct{}
	c        chan time.Time
}

func (q *manualQuiet) restart() {
	select {
	case q.restarts <- struct{}{}:
	default:
	}
}
func (q *manualQuiet) fired() <-chan time.Time { return q.c }

type watchEvent struct {
	name   string
	counts bool
}

func TestWatch(t *testing.T) {
	root := t.TempDir()
	g := filepath.Join(root, "a.com", "g")
	os.MkdirAll(g, 0o755)
	quiet := &manualQuiet{restarts: make(chan struct{}, 1), c: make(chan time.Time)}
	ready := make(chan struct{})
	events := make(chan watchEvent, 1000)
	rounds := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- watch(ctx, root, func() { rounds <- struct{}{} }, quiet, watchHooks{
			ready: func() { close(ready) },
			event: func(name string, counts bool) { events <- watchEvent{name, counts} },
		})
	}()
	<-ready

	// seen waits for the watcher to handle an event on name, and checks
	// whether it counted.
	seen := func(name string, counts bool) {
		t.Helper()
		for ev := range events {
			if ev.name == name {
				if ev.counts != counts {
					t.Fatalf("an event on %s counts=%v, want %v", name, ev.counts, counts)
				}
				return
			}
		}
	}
	// round ends the quiet period and waits for the one call it gives.
	round := func() {
		t.Helper()
		quiet.c <- time.Time{}
		<-rounds
		if len(rounds) != 0 {
			t.Fatal("more than one round for one quiet period")
		}
	}
	// A burst of saves restarts the quiet period; nothing runs before it ends.
	for i := 0; i < 20; i++ {
		os.WriteFile(filepath.Join(g, "tick.js"), []byte{byte(i)}, 0o644)
	}
	seen("tick.js", true)
	<-quiet.restarts
	if len(rounds) != 0 {
		t.Fatal("a round ran inside the quiet period")
	}
	round()
	// The generator's own outputs and hidden temp files start nothing.
	for _, name := range []string{"hoster.server.js", "hoster.client.js", "hoster.client.d.ts", ".tick.js.swp"} {
		os.WriteFile(filepath.Join(g, name), []byte("x"), 0o644)
		seen(name, false)
	}
	os.MkdirAll(filepath.Join(g, "node_modules", "x"), 0o755)
	seen("node_modules", false)
	// A folder made later is watched too.
	os.Mkdir(filepath.Join(g, "hoster-commands"), 0o755)
	seen("hoster-commands", true)
	os.Mkdir(filepath.Join(g, "hoster-commands", "jump"), 0o755)
	seen("jump", true)
	os.WriteFile(filepath.Join(g, "hoster-commands", "jump", "run.js"), []byte("x"), 0o644)
	seen("run.js", true)
	round()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
