package runtime

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestInvalidUTF8FrameCloses1007: a text frame that is not UTF-8 fails the
// connection with 1007, as RFC 6455 says; it is not taken as a command.
func TestInvalidUTF8FrameCloses1007(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
	c := e.join(t, "a.example", "lab", "x")
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(`{"c":"move","a":{"dx":1},"n":"`+"\xff"+`"}`)); err != nil {
		t.Fatal(err)
	}
	if code := c.closed(t); code != websocket.CloseInvalidFramePayloadData {
		t.Fatalf("closed with %d, want 1007", code)
	}
}

// TestFailedInstanceLetsGoOfWaitingPlayers: a player whose join was taken
// by a tick that fails (a throwing join, an endless tick) is closed with
// 1011 and the reason at once, not left waiting for a welcome.
func TestFailedInstanceLetsGoOfWaitingPlayers(t *testing.T) {
	throwing := lab(4)
	throwing["hoster-player/join.js"] = `export default function () { throw new Error("no joining today"); }`
	endless := lab(4)
	endless["hoster-instance/tick.js"] = `export default function () { for (;;) {} }`
	e := start(t, map[string]map[string]string{"a.example/throwing": throwing, "a.example/endless": endless})
	for _, g := range []string{"throwing", "endless"} {
		c, _, err := e.dial(t, "a.example", "/"+g+"?name=x", nil)
		if err != nil {
			t.Fatal(err)
		}
		if code := c.closed(t); code != websocket.CloseInternalServerErr {
			t.Fatalf("%s: closed with %d, want 1011", g, code)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestInstanceLogRateLimited: a game logging in a loop writes at most its
// allowance (logBurst at once, logRate a second after); the next line
// allowed says how many were held back. The clock is injected, so the
// second is exact.
func TestInstanceLogRateLimited(t *testing.T) {
	chatty := lab(4)
	chatty["hoster-player/join.js"] = `export default function (i, p) { p.name = "x"; p.x = 0; for (let n = 0; n < 200; n++) i.log("line", n); }`
	chatty["hoster-commands/say/run.js"] = `export default function (i) { i.log("again"); }`
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).UnixNano())
	logs := &lockedBuffer{}
	e := startWith(t, map[string]map[string]string{"a.example/chatty": chatty}, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	c := e.join(t, "a.example", "chatty", "x") // the join has logged
	if n := strings.Count(logs.String(), `msg="game log"`); n != logBurst {
		t.Fatalf("%d game log lines at once, want %d", n, logBurst)
	}
	clock.Add(int64(time.Second))
	c.send("say", nil)
	deadline := time.Now().Add(10 * time.Second) // a hang guard
	for !strings.Contains(logs.String(), "msg=again") {
		if time.Now().After(deadline) {
			t.Fatal("the next second's line never came")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "heldBack=180") {
		t.Fatalf("the dropped lines are not counted:\n%s", logs.String())
	}
}

// TestDroppedLogLinesReportedAtTheEnd: lines held back from a game that
// then falls silent are counted when its instance ends.
func TestDroppedLogLinesReportedAtTheEnd(t *testing.T) {
	chatty := lab(4)
	chatty["hoster-player/join.js"] = `export default function (i, p) { p.name = "x"; p.x = 0; for (let n = 0; n < 80; n++) i.log("line", n); }`
	logs := &lockedBuffer{}
	e := startWith(t, map[string]map[string]string{"a.example/chatty": chatty}, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.Now = func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }
	})
	c := e.join(t, "a.example", "chatty", "x")
	// The instance empties and ends after the resume grace and EmptyGrace.
	c.ws.Close()
	deadline := time.Now().Add(20 * time.Second) // a hang guard
	for !strings.Contains(logs.String(), "heldBack=60") {
		if time.Now().After(deadline) {
			t.Fatalf("the dropped lines were never counted:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
