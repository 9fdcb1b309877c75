package mirror

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestWatch(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a.com", "g"), 0o755)
	var rounds atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, root, 100*time.Millisecond, func() { rounds.Add(1) }) }()
	time.Sleep(100 * time.Millisecond) // let the watcher start

	wait := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for rounds.Load() < want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // nothing more may follow
		if got := rounds.Load(); got != want {
			t.Fatalf("%d rounds, want %d", got, want)
		}
	}
	// A burst of saves is one round.
	for i := 0; i < 20; i++ {
		os.WriteFile(filepath.Join(root, "a.com", "g", "tick.js"), []byte{byte(i)}, 0o644)
	}
	wait(1)
	// The generator's own outputs and hidden temp files start nothing.
	os.WriteFile(filepath.Join(root, "a.com", "g", "hoster.server.js"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "a.com", "g", ".tick.js.swp"), []byte("x"), 0o644)
	wait(1)
	// A folder made later is watched too.
	os.MkdirAll(filepath.Join(root, "a.com", "g", "hoster-commands", "jump"), 0o755)
	wait(2)
	os.WriteFile(filepath.Join(root, "a.com", "g", "hoster-commands", "jump", "run.js"), []byte("x"), 0o644)
	wait(3)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
