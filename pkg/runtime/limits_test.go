package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"
	"github.com/gorilla/websocket"
)

// heavy sends every viewer about 100 KB per player per round.
func heavy() map[string]string {
	return map[string]string{
		"hoster-game.json":          `{"tickRate": 50, "sendRate": 25, "capacity": 4, "origins": ["*"]}`,
		"hoster-player/fields.json": `{"name": "string", "blob": "string"}`,
		"hoster-player/join.js":     `export default function (i, p, params) { p.name = params.name; p.n = 0; }`,
		"hoster-instance/tick.js": `const base = "x".repeat(100000);
export default function (i) { for (const id in i.players) { const p = i.players[id]; p.n++; p.blob = base + p.n; } }`,
	}
}

// A viewer that stops reading is disconnected once a write is stuck past
// the write deadline; the others never notice but for its departure.
func TestSlowReaderDisconnected(t *testing.T) {
	e := startWith(t, map[string]map[string]string{"a.example/heavy": heavy()}, func(o *Options) {
		o.WriteTimeout = 300 * time.Millisecond
		o.ResumeGrace = 200 * time.Millisecond
		// Encoding 100 KB a player a round under -race on a busy machine
		// overran the tests' 200 ms budget and closed the instance.
		o.HookBudget = 5 * time.Second
	})
	// The slow player never reads a byte after the handshake.
	slow, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.url, "http")+"/heavy?name=slow",
		map[string][]string{"Host": {"a.example"}})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast := e.join(t, "a.example", "heavy", "fast")
	fast.until("the slow player appear", holdsPlayer("slow"))
	fast.until("the slow player gone, cut for not reading", func(m map[string]map[string]any) bool { return !holdsPlayer("slow")(m) })
	// The fast player is still being served.
	fast.drain()
	fast.next("update")
}

// A socket that takes its updates as they come has no goroutine writing
// for it, and none reading it (the read set reads every socket): a writer
// runs only while the socket is behind (the test above), so that 1,000
// players are not 1,000 idle writers, nor 1,000 parked readers.
func TestNoWriterForASocketThatKeepsUp(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
	first := e.join(t, "a.example", "lab", "p0")
	first.next("update")
	before := goruntime.NumGoroutine()
	const n = 12
	for i := range n {
		c := e.join(t, "a.example", "lab", fmt.Sprintf("p%d", i+1))
		c.next("update")
	}
	first.next("update")
	// Each test client has a reading goroutine of its own, and the server
	// none for a socket (the read set reads them all): 1 a player; a
	// reader or a writer each would make it 2.
	if grew := goruntime.NumGoroutine() - before; grew >= 3*n/2 {
		t.Fatalf("%d more goroutines for %d more players, want fewer than %d: a reader or a writer goroutine each?", grew, n, 3*n/2)
	}
}

func TestFrameAndRateLimits(t *testing.T) {
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4)}, func(o *Options) {
		o.MaxFrame = 1024
		o.MaxCommandsPerSecond = 20
	})
	big := e.join(t, "a.example", "lab", "big")
	big.ws.WriteMessage(websocket.TextMessage, []byte(`{"c":"move","a":{"dx":0},"pad":"`+strings.Repeat("x", 2000)+`"}`))
	if code := big.closed(t); code != websocket.CloseMessageTooBig {
		t.Fatalf("an oversized frame closed with %d, want 1009", code)
	}
	spam := e.join(t, "a.example", "lab", "spam")
	for i := 0; i < 50; i++ {
		spam.ws.WriteMessage(websocket.TextMessage, []byte(`{"c":"move","a":{"dx":0}}`))
	}
	if code := spam.closed(t); code != websocket.ClosePolicyViolation {
		t.Fatalf("a command flood closed with %d, want 1008", code)
	}
}

// On shutdown every player gets a going-away close.
func TestShutdownSaysGoingAway(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4), "b.example/lab": lab(4)})
	a := e.join(t, "a.example", "lab", "a")
	b := e.join(t, "b.example", "lab", "b")
	if err := e.rt.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*client{a, b} {
		if code := c.closed(t); code != websocket.CloseGoingAway {
			t.Fatalf("shutdown closed with %d, want 1001", code)
		}
	}
}

// A connection with maxUpdatesInFlight updates still queued is skipped
// ("busy") until its writer has taken everything; error frames do not count.
func TestConnStateAtSendRound(t *testing.T) {
	c := &conn{wake: make(chan struct{}, 1), gone: make(chan struct{})}
	if c.state() != connReady {
		t.Fatal("a new connection is not ready")
	}
	c.enqueue([]byte(`{"t":"error"}`), false)
	if c.state() != connReady {
		t.Fatal("an error frame made the connection skip updates")
	}
	c.enqueue([]byte(`{"t":"update"}`), true)
	if c.state() != connReady {
		t.Fatal("one update waiting for the writer made the connection skip")
	}
	c.enqueue([]byte(`{"t":"update"}`), true)
	if c.state() != connBusy {
		t.Fatalf("%d queued updates did not make the connection busy", maxUpdatesInFlight)
	}
	c.closeWith(1000, "")
	if c.state() != connClosed {
		t.Fatal("a closing connection is not closed")
	}
}

// Whatever a player sends, parseCommand returns a command or the malformed
// error, never panics, and an accepted frame is one object with a name.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`{"c": "move", "a": {"dx": 1}}`, `{"c": "x"}`, `{"c": ""}`, `[]`, `null`, `{"c": "m", "a": 1} x`, "{\"c\": \"\xff\"}", `{"c": "a", "c": "b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseCommand(data)
		if err != nil {
			if err != errMalformed {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if m.C == "" {
			t.Fatalf("accepted %q without a command name", data)
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			t.Fatalf("accepted %q, which is not one JSON value", data)
		}
	})
}

// A budget timer whose function runs late, after its call ended, must not
// interrupt the next call; one that fires during its call interrupts it.
func TestLateBudgetTimerNeverInterruptsTheNextCall(t *testing.T) {
	r := goja.New()
	spinning := make(chan struct{})
	r.Set("spinning", func() { close(spinning) })
	if _, err := r.RunString(`function quick() { return 1; } function spin() { spinning(); for (;;) {} }`); err != nil {
		t.Fatal(err)
	}
	quick, _ := goja.AssertFunction(r.Get("quick"))
	spin, _ := goja.AssertFunction(r.Get("spin"))

	fire, end := armInterrupt(r, "late")
	if _, err := quick(goja.Undefined()); err != nil {
		t.Fatal(err)
	}
	end()
	fire() // the timer's function, run after the call was over
	fire2, end2 := armInterrupt(r, "next")
	if _, err := quick(goja.Undefined()); err != nil {
		t.Fatalf("the next call was interrupted by the previous call's late timer: %v", err)
	}
	end2()
	_ = fire2

	fire3, end3 := armInterrupt(r, "overrun")
	go func() { <-spinning; fire3() }()
	_, err := spin(goja.Undefined())
	end3()
	var ie *goja.InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("a call running when its timer fired: %v, want interrupted", err)
	}
	if _, err := quick(goja.Undefined()); err != nil {
		t.Fatalf("a call after an interrupted one: %v", err)
	}
}
