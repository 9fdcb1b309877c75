package worker

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// A worker whose hook is stuck sends why, then exits (child.go's Stuck).
// The parent may see the exit before it reads that last message: the
// reason its players and its log get is still the one the worker sent,
// not "the game's worker ended". The hooks make the parent see the exit
// first; the worker is a shell standing in for child.go's two steps.
func TestStuckReasonReadAfterTheExit(t *testing.T) {
	seen := make(chan struct{})
	exitSeen = func(*proc) { close(seen) }
	beforeMessage = func(*proc) { <-seen }
	t.Cleanup(func() { exitSeen, beforeMessage = nil, nil })

	logs := waitbuf.New()
	p := New(Options{
		// It reads its version's packet, says it is stuck and exits, as a
		// worker whose hook ignored its interrupt does.
		Command: []string{"sh", "-c", `head -c 1 <&3 >/dev/null; printf '{"t":"stuck","reason":"a regexp"}' >&3; exit 3`, "worker"},
		Budget:  func(string, string) int64 { return 64 << 20 },
		Source: func(string, string) (runtime.Source, bool, error) {
			return runtime.Source{ID: "v1"}, true, nil
		},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if _, err := p.worker("a.example/count"); err != nil {
		t.Fatal(err)
	}
	if !logs.WaitFor(`msg="game worker ended:`, 1, 60*time.Second) { // a hang guard
		t.Fatalf("the worker's end is not logged:\n%s", logs)
	}
	if want := `msg="game worker ended: ` + reasonStuck + `: a regexp"`; !strings.Contains(logs.String(), want) {
		t.Fatalf("the worker's end is logged without the reason it sent, want %s:\n%s", want, logs)
	}
}
