package runtime

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/compact"
)

// boundedLab is lab(4) open to any origin, with maxInstances when n > 0.
func boundedLab(n int) map[string]string {
	files := lab(4)
	setting := ""
	if n > 0 {
		setting = fmt.Sprintf(`, "maxInstances": %d`, n)
	}
	files["hoster-game.json"] = `{"tickRate": 50, "sendRate": 25, "capacity": 4, "origins": ["*"]` + setting + `}`
	return files
}

// from is the header of a socket that comes through a loopback proxy
// (Caddy) for the client at addr.
func from(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

// welcomed dials path and waits for its welcome, returning its instance.
func (e *env) welcomed(t *testing.T, path string, h http.Header) string {
	t.Helper()
	c, _, err := e.dial(t, "a.example", path, h)
	if err != nil {
		t.Fatal(err)
	}
	return c.next("welcome")["instance"].(string)
}

// refused dials path and reads until the server closes the socket,
// returning the error frame and the close frame it got, as a page would.
func (e *env) refused(t *testing.T, path string, h http.Header) (errFrame string, closed *websocket.CloseError) {
	t.Helper()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Host", "a.example")
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.url, "http")+path, h)
	if err != nil {
		t.Fatalf("dialling %s: %v", path, err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second)) // a hang guard
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			ce, ok := err.(*websocket.CloseError)
			if !ok {
				t.Fatalf("%s: the socket ended without a close frame: %v", path, err)
			}
			return errFrame, ce
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		if m["t"] == "welcome" {
			t.Fatalf("%s was welcomed, want it refused", path)
		}
		if m["t"] == "error" {
			errFrame, _ = m["error"].(string)
		}
	}
}

// wantRefused checks that path is turned away with 1013 and reason, in the
// error frame and the close frame both.
func (e *env) wantRefused(t *testing.T, path string, h http.Header, reason string) {
	t.Helper()
	msg, ce := e.refused(t, path, h)
	if ce.Code != 1013 || ce.Text != reason || msg != reason {
		t.Fatalf("%s: closed with %d %q after the error %q, want 1013 and %q", path, ce.Code, ce.Text, msg, reason)
	}
}

// A game at its maxInstances starts no other: a new room is refused with
// 1013 before any of its code runs, and logged once a minute however
// often it is asked; a player of a room that exists still joins it.
func TestMaxInstancesRefusesANewRoom(t *testing.T) {
	var logs logBuf
	e := startWith(t, map[string]map[string]string{"a.example/lab": boundedLab(2)}, withLog(&logs))
	r1 := e.welcomed(t, "/lab?room=r1", nil)
	e.welcomed(t, "/lab?room=r2", nil)
	reason := "the game runs as many instances as it may (2): try again later"
	e.wantRefused(t, "/lab?room=r3", nil, reason)
	e.wantRefused(t, "/lab?room=r4", nil, reason)
	e.wantRefused(t, "/lab", nil, reason) // a public instance is an instance too
	if n := len(e.rt.lookup("a.example", "lab").snapshot()); n != 2 {
		t.Fatalf("%d instances after the refusals, want 2", n)
	}
	if in := e.welcomed(t, "/lab?room=r1", nil); in != r1 {
		t.Fatalf("a player of room r1 was placed in %s, not its instance %s", in, r1)
	}
	out := logs.wait(t, "socket refused: the game runs as many instances as it may", "game=a.example/lab", "limit=2", "address=127.0.0.1")
	if n := strings.Count(out, "as many instances as it may\""); n != 1 {
		t.Fatalf("three refusals logged %d times within a minute, want once:\n%s", n, out)
	}
}

// An address starts at most RoomsPerMinute new instances in a minute of
// the runtime's clock; another address is not held back by it, a room
// that exists still takes the first, and a minute later it may start
// rooms again.
func TestRoomsPerMinutePerAddress(t *testing.T) {
	var logs logBuf
	clock := &fakeClock{t: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	e := startWith(t, map[string]map[string]string{"a.example/lab": boundedLab(0)}, func(o *Options) {
		withLog(&logs)(o)
		o.RoomsPerMinute, o.Now = 3, clock.Now
	})
	ada, bob := from("203.0.113.1"), from("203.0.113.2")
	for _, room := range []string{"a1", "a2", "a3"} {
		e.welcomed(t, "/lab?room="+room, ada)
	}
	e.wantRefused(t, "/lab?room=a4", ada, "too many new rooms from your address: try again in a minute")
	logs.wait(t, "socket refused: too many new instances from one address in a minute", "game=a.example/lab", "address=203.0.113.1", "limit=3")
	e.welcomed(t, "/lab?room=b1", bob)
	e.welcomed(t, "/lab?room=a1", ada) // no new instance
	clock.Add(time.Minute)
	e.welcomed(t, "/lab?room=a4", ada)
}

// An address holds at most SocketsPerAddress game sockets at once; the
// next is refused with 1013 and logged, and another address still joins.
func TestSocketsPerAddress(t *testing.T) {
	var logs logBuf
	e := startWith(t, map[string]map[string]string{"a.example/lab": boundedLab(0)}, func(o *Options) {
		withLog(&logs)(o)
		o.SocketsPerAddress = 2
	})
	ada, bob := from("203.0.113.1"), from("2001:db8:1:2::7")
	e.welcomed(t, "/lab", ada)
	e.welcomed(t, "/lab?room=x", ada)
	e.wantRefused(t, "/lab", ada, "too many connections from your address: try again later")
	logs.wait(t, "socket refused: too many sockets from one address", "game=a.example/lab", "address=203.0.113.1", "limit=2")
	e.welcomed(t, "/lab", bob)
	e.welcomed(t, "/lab", from("2001:db8:1:2::8")) // the same /64: one address
	e.wantRefused(t, "/lab", from("2001:db8:1:2::9"), "too many connections from your address: try again later")
}

// A game's maxInstances above the server's maximum is capped at it, and
// the log says so; a game without the setting gets the server's default.
func TestMaxInstancesCappedByTheServer(t *testing.T) {
	var logs logBuf
	e := startWith(t, map[string]map[string]string{"a.example/lab": boundedLab(5), "a.example/plain": boundedLab(0)}, func(o *Options) {
		withLog(&logs)(o)
		o.MaxInstances, o.Instances = 2, 1
	})
	logs.wait(t, "maxInstances is above the server's maximum: capped", "game=a.example/lab", "maxInstances=5", "cap=2")
	e.welcomed(t, "/lab?room=r1", nil)
	e.welcomed(t, "/lab?room=r2", nil)
	e.wantRefused(t, "/lab?room=r3", nil, "the game runs as many instances as it may (2): try again later")
	e.welcomed(t, "/plain?room=r1", nil)
	e.wantRefused(t, "/plain?room=r2", nil, "the game runs as many instances as it may (1): try again later")
}

// The bounds count an IPv4 address, and an IPv6 address by its /64.
func TestAddrKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.1":          "203.0.113.1",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2::ffff":   "2001:db8:1:2::/64",
		"::1":                  "::/64",
	} {
		if got := addrKey(netip.MustParseAddr(in)); got != want {
			t.Errorf("addrKey(%s) = %s, want %s", in, got, want)
		}
	}
	if addrKey(netip.Addr{}) != "" {
		t.Error("no address is not the empty key")
	}
}

// A negative bound is none (hoster dev's, whose sockets all come from the
// developer), and a socket without an address (hoster test's players) is
// under no per-address bound.
func TestNoAddressBound(t *testing.T) {
	none := &Runtime{o: Options{RoomsPerMinute: -1, SocketsPerAddress: -1}, now: time.Now}
	tight := &Runtime{o: Options{RoomsPerMinute: 1, SocketsPerAddress: 1}, now: time.Now}
	for i := range 100 {
		if !none.TakeRoom("203.0.113.1") || !none.takeSocket("203.0.113.1") || !tight.TakeRoom("") || !tight.takeSocket("") {
			t.Fatalf("refused at %d without a bound", i)
		}
	}
}

// A join that starts a room may wait for the server's parent to grant it
// (Options.TakeRoom, a round trip in a worker); meanwhile other joins of
// the game go on: one to a running instance is welcomed, and another to
// the same new room waits for it and then joins it.
func TestJoinsGoOnWhileARoomIsTaken(t *testing.T) {
	asked, grant := make(chan string, 4), make(chan bool)
	e := startWith(t, map[string]map[string]string{"a.example/lab": boundedLab(0)}, func(o *Options) {
		o.RoomsPerMinute = 100
		o.TakeRoom = func(addr string) bool {
			asked <- addr
			return <-grant
		}
	})
	go func() { <-asked; grant <- true }() // the public instance starts at once
	public := e.welcomed(t, "/lab", from("203.0.113.1"))

	r1 := make(chan string, 2)
	for range 2 {
		go func() {
			c, _, err := e.dial(t, "a.example", "/lab?room=r1", from("203.0.113.2"))
			if err != nil {
				r1 <- err.Error()
				return
			}
			r1 <- c.next("welcome")["instance"].(string)
		}()
	}
	if addr := <-asked; addr != "203.0.113.2" {
		t.Fatalf("the room was asked for %q, want 203.0.113.2", addr)
	}
	// r1 is being granted: a player of the running instance joins it.
	if in := e.welcomed(t, "/lab", from("203.0.113.3")); in != public {
		t.Fatalf("a public player went to %s, want the running %s", in, public)
	}
	grant <- true
	a, b := <-r1, <-r1
	if a != b || a == public {
		t.Fatalf("the two players of r1 went to %q and %q, want one new instance", a, b)
	}
	select {
	case addr := <-asked:
		t.Fatalf("a second room was asked for (%s) where one r1 was to start", addr)
	default:
	}
}

// A socket handed over with the room its parent took for it (a worker's,
// Adopt) starts its instance without asking again (Options.TakeRoom), and
// says whether it spent that room once its place is known: a join of a
// running instance, or a socket turned away before its place, gives it
// back. A socket with no such room still asks.
func TestGrantedRoomSpentWithoutAsking(t *testing.T) {
	asked := make(chan string, 4)
	e := startWith(t, map[string]map[string]string{"a.example/lab": boundedLab(0)}, func(o *Options) {
		o.RoomsPerMinute = 100
		o.TakeRoom = func(addr string) bool { asked <- addr; return true }
	})
	settled := make(chan bool, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		var settle RoomSettle
		if r.Header.Get("X-Test-Granted") != "" {
			settle = func(spent bool) { settled <- spent }
		}
		e.rt.Adopt(ws.NetConn(), Adopted{Domain: "a.example", Game: "lab", Query: r.URL.RawQuery,
			Addr: AddrKey(r), Compact: ws.Subprotocol() == compact.Protocol}, settle)
	}))
	t.Cleanup(ts.Close)
	g := *e
	g.url = ts.URL
	granted := func(addr string) http.Header { h := from(addr); h.Set("X-Test-Granted", "1"); return h }

	first := g.welcomed(t, "/lab", granted("203.0.113.1"))
	if spent := <-settled; !spent {
		t.Fatal("the join that started the public instance did not spend its granted room")
	}
	if in := g.welcomed(t, "/lab", granted("203.0.113.1")); in != first {
		t.Fatalf("the second player went to %s, want the running %s", in, first)
	}
	if spent := <-settled; spent {
		t.Fatal("a join of a running instance spent its granted room")
	}
	select {
	case addr := <-asked:
		t.Fatalf("a granted socket asked for a room again (%s)", addr)
	default:
	}
	g.welcomed(t, "/lab?room=r1", from("203.0.113.2"))
	if addr := <-asked; addr != "203.0.113.2" {
		t.Fatalf("the room was asked for %q, want 203.0.113.2", addr)
	}
	if c, _, err := g.dial(t, "a.example", "/lab?room=not-a-code", granted("203.0.113.3")); err == nil {
		if code := c.closed(t); code != websocket.ClosePolicyViolation {
			t.Errorf("a socket with a bad room's name was closed with %d, want 1008", code)
		}
	}
	if spent := <-settled; spent {
		t.Fatal("a socket turned away before its place spent its granted room")
	}
}

// A room taken and not spent goes back to its address, never past the
// bucket's RoomsPerMinute.
func TestReturnRoom(t *testing.T) {
	now := time.Unix(1e6, 0)
	rt := &Runtime{o: Options{RoomsPerMinute: 2}, now: func() time.Time { return now }}
	for range 2 {
		if !rt.TakeRoom("203.0.113.1") {
			t.Fatal("a room within the bound was refused")
		}
	}
	if rt.TakeRoom("203.0.113.1") {
		t.Fatal("a room past the bound was taken")
	}
	rt.ReturnRoom("203.0.113.1")
	if !rt.TakeRoom("203.0.113.1") {
		t.Fatal("a room given back was not there to take")
	}
	for range 5 {
		rt.ReturnRoom("203.0.113.1")
	}
	for i := range 3 {
		if ok := rt.TakeRoom("203.0.113.1"); ok != (i < 2) {
			t.Fatalf("take %d after rooms were given back: %v, want at most RoomsPerMinute (2)", i, ok)
		}
	}
}
