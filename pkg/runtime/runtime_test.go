package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/compact"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// writeGame writes a game's definition files under root/domain/name.
func writeGame(t *testing.T, root, domain, name string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(root, domain, name, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func cfg(capacity int) string {
	return fmt.Sprintf(`{"tickRate": 50, "sendRate": 25, "capacity": %d, "origins": ["https://good.example"]}`, capacity)
}

// lab is a small game that exercises the runtime.
func lab(capacity int) map[string]string {
	return map[string]string{
		"hoster-game.json":                cfg(capacity),
		"hoster-player/fields.json":       `{"name": "string", "x": "number"}`,
		"hoster-player/join.js":           `export default function (i, p, params) { p.name = params.name || "anon"; p.x = 0; }`,
		"hoster-entities/box/fields.json": `{"n": "integer"}`,
		"hoster-instance/create.js":       `export default function (i) { i.spawn("box", {n: 1}); }`,
		"hoster-commands/move/args.json":  `{"dx": {"type": "number", "min": -1, "max": 1}}`,
		"hoster-commands/move/run.js":     `export default function (i, p, a) { p.x += a.dx; }`,
		"hoster-commands/spin/args.json":  `{}`,
		"hoster-commands/spin/run.js":     `export default function () { for (;;) {} }`,
		"hoster-commands/recurse/run.js":  `function f(n) { return f(n + 1) + 1; } export default function () { f(0); }`,
	}
}

type env struct {
	rt   *Runtime
	url  string
	root string
}

func start(t *testing.T, games map[string]map[string]string) *env {
	t.Helper()
	return startWith(t, games, nil)
}

// startWith is start with options adjusted by opt.
func startWith(t *testing.T, games map[string]map[string]string, opt func(*Options)) *env {
	t.Helper()
	root := t.TempDir()
	for key, files := range games {
		domain, name, _ := strings.Cut(key, "/")
		writeGame(t, root, domain, name, files)
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating the test games: %v %v", err, res.Problems())
	}
	o := Options{Logger: testLogger(t), GamesRoot: root, EmptyGrace: 200 * time.Millisecond, ResumeGrace: 2 * time.Second, HookBudget: 2 * time.Second}
	if opt != nil {
		opt(&o)
	}
	rt, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(rt)
	t.Cleanup(func() {
		// Not t.Context(), cancelled by now: the instances' last stats lines
		// are written before the test's folders are removed.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard
		defer cancel()
		rt.Shutdown(ctx)
		ts.Close()
	})
	return &env{rt: rt, url: ts.URL, root: root}
}

// dialCompact makes dial ask for the compact protocol (and read its frames
// back as the JSON protocol's), to run a test on both.
var dialCompact bool

type client struct {
	t      *testing.T
	ws     *websocket.Conn
	msgs   chan map[string]any
	me     string
	inst   string
	resume string
	// what this client mirrors
	mu        sync.Mutex
	things    map[string]map[string]any
	closeCode int
	applied   chan struct{} // a token after each message applied; closed with the socket
	history   []seen        // what it knew after each update
}

// seen is what a client knew after an update at a time.
type seen struct {
	time   float64
	things map[string]map[string]any
}

func (e *env) dial(t *testing.T, host, path string, h http.Header) (*client, *http.Response, error) {
	t.Helper()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Host", host)
	if dialCompact && h.Get("Sec-WebSocket-Protocol") == "" {
		h.Set("Sec-WebSocket-Protocol", compact.Protocol)
	}
	ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.url, "http")+path, h)
	if err != nil {
		return nil, resp, err
	}
	var dec *compact.Decoder // the compact protocol's frames, read back as JSON ones
	if ws.Subprotocol() == compact.Protocol {
		dec = &compact.Decoder{}
	}
	c := &client{t: t, ws: ws, msgs: make(chan map[string]any, 1000), things: map[string]map[string]any{}, applied: make(chan struct{}, 1)}
	go func() {
		defer close(c.msgs)
		defer close(c.applied)
		for {
			var m map[string]any
			kind, raw, err := ws.ReadMessage()
			if err == nil {
				frame := raw
				switch {
				case dec != nil && kind == websocket.BinaryMessage:
					var u *compact.Message
					if u, err = dec.Update(raw); err == nil {
						frame, _ = json.Marshal(u)
					} else {
						t.Errorf("decoding a compact update: %v", err)
					}
				case dec != nil:
					if err = dec.Text(raw); err != nil {
						t.Errorf("a text frame of the compact protocol: %v", err)
					}
				case kind != websocket.TextMessage:
					t.Errorf("a binary frame on the JSON protocol")
				}
				if err == nil {
					err = json.Unmarshal(frame, &m)
					m["_bytes"] = len(raw) // the frame's size, for telemetry checks
				}
			}
			if err != nil {
				if ce, ok := err.(*websocket.CloseError); ok {
					c.mu.Lock()
					c.closeCode = ce.Code
					c.mu.Unlock()
				}
				return
			}
			c.apply(m)
			if m["t"] == "update" {
				c.mu.Lock()
				things := map[string]map[string]any{}
				for id, f := range c.things {
					things[id] = maps.Clone(f)
				}
				tm, _ := m["time"].(float64)
				c.history = append(c.history, seen{tm, things})
				c.mu.Unlock()
			}
			select {
			case c.applied <- struct{}{}:
			default:
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() { ws.Close() })
	return c, resp, nil
}

func (e *env) join(t *testing.T, host, game, name string) *client {
	t.Helper()
	c, _, err := e.dial(t, host, "/"+game+"?name="+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := c.next("welcome")
	c.me, c.inst = w["player"].(string), w["instance"].(string)
	c.resume, _ = w["resume"].(string)
	return c
}

func (c *client) apply(m map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m["t"] == "welcome" {
		c.things = map[string]map[string]any{}
	}
	if m["t"] != "update" {
		return
	}
	if l, ok := m["appear"].([]any); ok {
		for _, x := range l {
			a := x.(map[string]any)
			f := a["f"].(map[string]any)
			f["type"] = a["type"]
			c.things[a["id"].(string)] = f
		}
	}
	if l, ok := m["change"].([]any); ok {
		for _, x := range l {
			ch := x.(map[string]any)
			for k, v := range ch["f"].(map[string]any) {
				c.things[ch["id"].(string)][k] = v
			}
		}
	}
	if l, ok := m["gone"].([]any); ok {
		for _, x := range l {
			delete(c.things, x.(string))
		}
	}
}

// next waits for a message of type typ, failing after a generous timeout.
func (c *client) next(typ string) map[string]any {
	c.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("socket closed while waiting for %q (code %d)", typ, c.code())
			}
			if m["t"] == typ {
				return m
			}
		case <-timeout:
			c.t.Fatalf("no %q message", typ)
		}
	}
}

// until waits until the mirrored state satisfies ok.
func (c *client) until(what string, ok func(map[string]map[string]any) bool) {
	c.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		done := ok(c.things)
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case _, open := <-c.applied:
			if !open {
				c.t.Fatalf("socket closed (code %d) before: %s", c.code(), what)
			}
		case <-timeout:
			c.t.Fatalf("never saw: %s", what)
		}
	}
}

// drain discards the messages received so far.
func (c *client) drain() {
	for {
		select {
		case <-c.msgs:
		default:
			return
		}
	}
}

func (c *client) code() int { c.mu.Lock(); defer c.mu.Unlock(); return c.closeCode }

func (c *client) send(cmd string, args any) {
	if err := c.ws.WriteJSON(map[string]any{"c": cmd, "a": args}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) closed(t *testing.T) int {
	t.Helper()
	// A guard against a hang, not a deadline: on a machine as busy as
	// busyMachine makes it, under the race detector and beside other test
	// binaries, a hook's 200 ms of CPU time has taken over 10 s of wall time.
	timeout := time.After(60 * time.Second)
	for {
		select {
		case _, ok := <-c.msgs:
			if !ok {
				return c.code()
			}
		case <-timeout:
			t.Fatal("the socket was not closed")
		}
	}
}

func TestJoinAppearChangeGone(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
	ada := e.join(t, "a.example", "lab", "ada")
	if len(ada.inst) != 12 {
		t.Fatalf("instance id %q is not 6 bytes of hex", ada.inst)
	}
	ada.until("herself and the box", func(m map[string]map[string]any) bool {
		return m[ada.me] != nil && m[ada.me]["name"] == "ada" && m[ada.me]["type"] == "player" && len(m) == 2
	})
	bob := e.join(t, "a.example:8443", "lab", "bob") // a port in Host is ignored
	if bob.inst != ada.inst {
		t.Fatal("the second player must join the instance with room")
	}
	ada.until("bob appear", func(m map[string]map[string]any) bool { return m[bob.me] != nil && m[bob.me]["name"] == "bob" })
	bob.send("move", map[string]any{"dx": 1})
	ada.until("bob's x change", func(m map[string]map[string]any) bool { return m[bob.me]["x"] == 1.0 })
	// Only changed fields travel, and seq increases.
	ada.drain()
	var last float64
	for i := 0; i < 3; i++ {
		bob.send("move", map[string]any{"dx": 0.5})
		u := ada.next("update")
		if seq := u["seq"].(float64); seq <= last {
			t.Fatalf("seq went from %v to %v", last, seq)
		} else {
			last = seq
		}
		if ch, ok := u["change"].([]any); ok {
			f := ch[0].(map[string]any)["f"].(map[string]any)
			if _, has := f["name"]; has {
				t.Fatalf("an unchanged field was sent: %v", f)
			}
		}
		if _, has := u["appear"]; has {
			t.Fatalf("an update repeated an appear: %v", u)
		}
	}
	bob.ws.Close()
	// bob leaves when his resume grace ends.
	ada.until("bob gone", func(m map[string]map[string]any) bool { return m[bob.me] == nil })
}

func TestCommandErrorsKeepTheSocket(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
	c := e.join(t, "a.example", "lab", "x")
	for _, tc := range []struct {
		frame string
		want  string
	}{
		{`{"c": "jump", "a": {}}`, `unknown command "jump"`},
		{`{"c": "move", "a": {"dx": 5}}`, `argument "dx" must be at most 1`},
		{`{"c": "move", "a": {}}`, `missing argument "dx"`},
		{`{"c": "move", "a": {"dx": 0, "dy": 1}}`, `unknown argument "dy"`},
		{`{"c": "move", "a": "dx"}`, `arguments must be an object`},
		{`not json`, `malformed message`},
		{`{"a": {}}`, `malformed message`},
		{`{"c": "move", "a": {"dx": 1}} {"c": "move"}`, `malformed message`},
		{`{"c": "move", "a": {"dx": 1}`, `malformed message`},
	} {
		c.ws.WriteMessage(websocket.TextMessage, []byte(tc.frame))
		if got := c.next("error")["error"].(string); !strings.Contains(got, tc.want) {
			t.Errorf("%s: error %q, want %q", tc.frame, got, tc.want)
		}
	}
	c.ws.WriteMessage(websocket.BinaryMessage, []byte{1, 2})
	c.next("error")
	c.send("move", map[string]any{"dx": 1})
	c.until("the socket still works", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 1.0 })
}

func TestCapacityStartsAnotherInstance(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(2)})
	var wg sync.WaitGroup
	clients := make([]*client, 5)
	for i := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); clients[i] = e.join(t, "a.example", "lab", fmt.Sprint(i)) }()
	}
	wg.Wait()
	per := map[string]int{}
	for _, c := range clients {
		per[c.inst]++
	}
	if len(per) != 3 {
		t.Fatalf("5 players, capacity 2: instances %v, want 3", per)
	}
	for id, n := range per {
		if n > 2 {
			t.Fatalf("instance %s holds %d players, over capacity 2", id, n)
		}
	}
}

func TestOriginAndRouting(t *testing.T) {
	e := start(t, map[string]map[string]string{
		"a.example/lab":  lab(4),
		"b.example/lab":  lab(4),
		"b.example/solo": lab(1),
	})
	// Origin refused with 403 before the upgrade; an allowed one passes.
	_, resp, err := e.dial(t, "a.example", "/lab", http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("bad origin: %v %v", err, resp)
	}
	if _, _, err := e.dial(t, "a.example", "/lab", http.Header{"Origin": {"https://good.example"}}); err != nil {
		t.Fatalf("good origin: %v", err)
	}
	// Same game name on two domains: two games, two instances.
	a := e.join(t, "a.example", "lab", "a")
	b := e.join(t, "B.Example", "lab", "b")
	if w := a.inst; w == b.inst {
		t.Fatal("two domains shared an instance")
	}
	for _, tc := range []struct{ host, path string }{{"c.example", "/lab"}, {"a.example", "/nope"}, {"a.example", "/lab/x"}, {"a.example", "/"},
		// The game's files, its library too, are pkg/pages'.
		{"b.example", "/lab/hoster.client.js"}} {
		req, _ := http.NewRequest("GET", e.url+tc.path, nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s%s: %d, want 404", tc.host, tc.path, resp.StatusCode)
		}
	}
	// The ask gate.
	ask := httptest.NewServer(e.rt.AskHandler())
	defer ask.Close()
	for domain, want := range map[string]int{"a.example": 200, "B.EXAMPLE": 200, "c.example": 404, "": 404} {
		resp, _ := http.Get(ask.URL + "/ask?domain=" + domain)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("ask %q: %d, want %d", domain, resp.StatusCode, want)
		}
	}
}

func TestRunawayHookIsolated(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4), "b.example/lab": lab(4)})
	victim := e.join(t, "a.example", "lab", "v")
	other := e.join(t, "b.example", "lab", "o")
	victim.send("spin", map[string]any{})
	if code := victim.closed(t); code != 1011 {
		t.Fatalf("runaway instance closed with %d, want 1011", code)
	}
	// The other game keeps ticking and sending.
	other.send("move", map[string]any{"dx": 1})
	other.until("the other game still answers", func(m map[string]map[string]any) bool { return m[other.me]["x"] == 1.0 })
	// Unbounded recursion is stopped too.
	r := e.join(t, "a.example", "lab", "r")
	r.send("recurse", nil)
	if code := r.closed(t); code != 1011 {
		t.Fatalf("recursing instance closed with %d, want 1011", code)
	}
}

func TestResume(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
	c := e.join(t, "a.example", "lab", "ada")
	c.send("move", map[string]any{"dx": 1})
	c.until("moved", func(m map[string]map[string]any) bool { return m[c.me]["x"] == 1.0 })
	c.ws.Close()
	r, _, err := e.dial(t, "a.example", "/lab?resume="+c.resume, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := r.next("welcome")
	if w["player"] != c.me || w["instance"] != c.inst {
		t.Fatalf("resumed as %v in %v, want %s in %s", w["player"], w["instance"], c.me, c.inst)
	}
	r.me = c.me
	r.until("a full appear of what it sees, state kept", func(m map[string]map[string]any) bool {
		return m[c.me] != nil && m[c.me]["x"] == 1.0 && len(m) == 2
	})
	// A bad token is just a new player.
	n, _, _ := e.dial(t, "a.example", "/lab?resume=nonsense", nil)
	if w := n.next("welcome"); w["player"] == c.me {
		t.Fatal("a bad resume token took over a seat")
	}
}

// A viewer that stops reading never slows its instance: the others keep
// playing. The slow socket's buffers are made tiny (the server's send
// buffer, the client's receive buffer) and every player carries 50 KB, so
// the first update to the slow viewer cannot be written until it reads,
// which it never does; the write deadline is longer than the test.
func TestSlowReaderDoesNotSlowOthers(t *testing.T) {
	files := lab(4)
	files["hoster-player/fields.json"] = `{"name": "string", "x": "number", "blob": "string"}`
	files["hoster-player/join.js"] = `export default function (i, p, params) { p.name = params.name; p.x = 0; p.blob = "b".repeat(50000); }`
	e := startWith(t, map[string]map[string]string{"a.example/lab": files}, func(o *Options) {
		o.WriteTimeout = time.Hour
	})
	// A server whose sockets have a small send buffer.
	ts := httptest.NewUnstartedServer(e.rt)
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Start()
	t.Cleanup(ts.Close)
	e.url = ts.URL

	d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if err == nil {
			c.(*net.TCPConn).SetReadBuffer(4096)
		}
		return c, err
	}}
	slow, _, err := d.Dial("ws"+strings.TrimPrefix(e.url, "http")+"/lab?name=slow", http.Header{"Host": {"a.example"}})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close() // never read
	fast := e.join(t, "a.example", "lab", "fast")
	fast.until("the slow player", holdsPlayer("slow"))
	for i := 0; i < 50; i++ {
		fast.send("move", map[string]any{"dx": 1})
	}
	fast.until("its own moves", func(m map[string]map[string]any) bool { return m[fast.me]["x"] == 50.0 })
}

// holdsPlayer is true of a mirrored state holding a player named name.
func holdsPlayer(name string) func(map[string]map[string]any) bool {
	return func(m map[string]map[string]any) bool {
		for _, th := range m {
			if th["name"] == name {
				return true
			}
		}
		return false
	}
}

// smallSendBuffers gives each accepted TCP connection a 4 KB send buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// testLogger sends the runtime's log to the test's, shown when it fails.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Reconnecting before the server noticed the old socket drop takes the seat
// over; the old socket is closed as replaced.
func TestResumeTakesOverALingeringSocket(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/lab": lab(4)})
	old := e.join(t, "a.example", "lab", "ada")
	r, _, err := e.dial(t, "a.example", "/lab?resume="+old.resume, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := r.next("welcome"); w["player"] != old.me || w["instance"] != old.inst {
		t.Fatalf("took over as %v, want %s", w["player"], old.me)
	}
	if code := old.closed(t); code != 4002 {
		t.Fatalf("the lingering socket closed with %d, want 4002 (replaced)", code)
	}
	r.me = old.me
	r.send("move", map[string]any{"dx": 1})
	r.until("the new socket plays", func(m map[string]map[string]any) bool { return m[old.me]["x"] == 1.0 })
}

// At start, a game with a bad configuration, a broken module or no module
// is skipped with its reason logged; the others serve, and a domain left
// with no valid game is not served at all.
func TestBrokenGamesAreSkipped(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	e := startWith(t, map[string]map[string]string{"a.example/lab": lab(4), "b.example/ok": lab(4)}, func(o *Options) {
		root := o.GamesRoot
		writeGame(t, root, "a.example", "badcfg", map[string]string{"hoster-game.json": `{"tickRate": "fast"}`})
		writeGame(t, root, "a.example", "broken", map[string]string{"hoster-game.json": cfg(4), "hoster.server.js": "this is not javascript {"})
		writeGame(t, root, "c.example", "nomod", map[string]string{"hoster-game.json": cfg(4)})
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	})
	got := append([]string(nil), e.rt.Games()...)
	sort.Strings(got)
	if strings.Join(got, " ") != "a.example/lab b.example/ok" {
		t.Fatalf("games served: %v", got)
	}
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	for _, want := range []string{"a.example/badcfg", "a.example/broken", "c.example/nomod", "compiling", "run hoster gen"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not name %q:\n%s", want, log)
		}
	}
	e.join(t, "a.example", "lab", "fine")
	ask := httptest.NewServer(e.rt.AskHandler())
	defer ask.Close()
	for domain, want := range map[string]int{"a.example": 200, "c.example": 404} {
		resp, err := http.Get(ask.URL + "/ask?domain=" + domain)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("ask %s: %d, want %d", domain, resp.StatusCode, want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
