package dev

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/socktest"
	"github.com/hoster-dev/hoster/internal/waitbuf"
)

// waitFor waits until the output holds sub, woken by each write; a
// generous guard fails the test instead of hanging it.
func waitFor(t *testing.T, what string, b *waitbuf.Buffer, sub string) {
	t.Helper()
	if !b.WaitFor(sub, 1, 20*time.Second) {
		t.Fatalf("waiting for %s", what)
	}
}

// startDev runs dev on root until the test ends, and returns the port of
// game's URL ("domain/name") and the terminal's two streams (shown when the
// test failed).
func startDev(t *testing.T, root, game string) (port int, out, log *waitbuf.Buffer) {
	t.Helper()
	out, log = &waitbuf.Buffer{}, &waitbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("TMPDIR", t.TempDir())
	go func() { done <- Run(ctx, Options{Root: root, Port: 0, Out: out, Log: log}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if t.Failed() {
			t.Logf("terminal:\n%s%s", out.String(), log.String())
		}
	})
	domain, name, _ := strings.Cut(game, "/")
	if !out.Until(func(s string) bool {
		_, u, ok := strings.Cut(s, game+"  ")
		n, _ := fmt.Sscanf(u, "http://"+domain+".localhost:%d/"+name+"/\n", &port)
		return ok && n == 1
	}, 20*time.Second) {
		t.Fatal("waiting for the game's URL")
	}
	return port, out, log
}

// loopback dials every name at 127.0.0.1, as browsers resolve *.localhost.
func loopback(port int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
	}
}

// The author's loop: hoster dev on a copy of the example, the page at its
// .localhost URL, a player on the socket from the page's origin, a hook
// edited and saved, and the new code answering on the same socket.
func TestDevRunsTheExampleAndFollowsEdits(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sites")
	if err := os.CopyFS(root, os.DirFS("../../examples/sites")); err != nil {
		t.Fatal(err)
	}
	var out, log waitbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// Its own temporary folder, so that other tests' dev servers (go test
	// runs packages side by side) are not counted as its leftovers.
	t.Setenv("TMPDIR", t.TempDir())
	tmpBefore, _ := filepath.Glob(filepath.Join(os.TempDir(), "hoster-dev-*"))
	go func() {
		done <- Run(ctx, Options{Root: root, Port: 0, Out: &out, Log: &log})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		// Ctrl-C removes the temporary hosting root.
		if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "hoster-dev-*")); len(after) > len(tmpBefore) {
			t.Errorf("the temporary root is left: %v", after)
		}
		if t.Failed() {
			t.Logf("terminal:\n%s%s", out.String(), log.String())
		}
	}()

	// The URL of the game, once it is loaded.
	var url string
	var port int
	if !out.Until(func(s string) bool {
		for _, line := range strings.SplitAfter(s, "\n") {
			if _, u, ok := strings.Cut(line, "example.com/arena  "); ok && strings.HasSuffix(u, "\n") {
				url = strings.TrimSuffix(u, "\n")
				fmt.Sscanf(url, "http://example.com.localhost:%d/arena/", &port)
				return true
			}
		}
		return false
	}, 20*time.Second) {
		t.Fatal("waiting for the game's URL")
	}
	if url != fmt.Sprintf("http://example.com.localhost:%d/arena/", port) || port == 0 {
		t.Fatalf("URL %q", url)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: loopback(port)}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, _ := os.ReadFile(filepath.Join(root, "example.com", "arena", "index.html"))
	if resp.StatusCode != 200 || string(page) != string(want) {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}

	// A player, from the page's own origin, which the game's origins do not
	// name.
	dialer := websocket.Dialer{NetDialContext: loopback(port)}
	conn, r, err := dialer.Dial(fmt.Sprintf("ws://example.com.localhost:%d/arena?name=dev", port),
		http.Header{"Origin": {fmt.Sprintf("http://example.com.localhost:%d", port)}})
	if err != nil {
		t.Fatalf("the socket from the page's origin: %v %v", err, r)
	}
	defer conn.Close()
	var welcome struct{ T, Player string }
	if err := conn.ReadJSON(&welcome); err != nil || welcome.T != "welcome" {
		t.Fatalf("welcome: %+v %v", welcome, err)
	}
	names := socktest.Names(conn, welcome.Player)
	conn.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 1, "dy": 0}})
	if name := <-names; name != "dev" {
		t.Fatalf("first name seen %q", name)
	}
	waitFor(t, "the join in the terminal", &log, "player joined player="+welcome.Player)

	// A page elsewhere is refused, and the terminal says why.
	if _, r, err := dialer.Dial(fmt.Sprintf("ws://example.com.localhost:%d/arena", port),
		http.Header{"Origin": {"https://elsewhere.example"}}); err == nil || r == nil || r.StatusCode != http.StatusForbidden {
		t.Fatalf("a socket from https://elsewhere.example: %v %v", err, r)
	}
	waitFor(t, "the refusal in the terminal", &log,
		"socket refused: its Origin is not in the game's origins origin=https://elsewhere.example allowed=https://example.com")

	// The author edits a hook and saves: the next move runs the new code.
	run := filepath.Join(root, "example.com", "arena", "hoster-commands", "move", "run.js")
	os.WriteFile(run, []byte(`export default function run(instance, player, args) { player.name = "edited"; instance.log("edited move"); }`), 0o644)
	took := socktest.MoveUntilNamed(t, conn, names, "edited", 50*time.Millisecond)
	t.Logf("the new code answered %v after the save, on the same socket", took.Round(10*time.Millisecond))
	// The terminal told the author what happened, game and instance named.
	waitFor(t, "the game log line", &log, "log: edited move")
	for _, want := range []string{"example.com/arena: game loaded", "moved to the new code", "synced "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the terminal lacks %q", want)
		}
	}

	// A generator problem is shown, and the running code keeps serving.
	os.WriteFile(run, []byte(`export default function run(instance, player, args) { player.name = ; }`), 0o644)
	waitFor(t, "the generator's problem", &log, "run.js:1")
}

func TestLocalhostMapsDomainsAndLoopbackOrigins(t *testing.T) {
	var got *http.Request
	h := Localhost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r }))
	for _, tc := range []struct {
		host, origin, wantHost, wantOrigin string
	}{
		{"example.com.localhost:8080", "http://example.com.localhost:8080", "example.com:8080", ""},
		{"Example.COM.localhost", "http://localhost:5173", "example.com", ""},
		{"example.com.localhost:8080", "http://127.0.0.1:3000", "example.com:8080", ""},
		{"example.com.localhost:8080", "http://[::1]:3000", "example.com:8080", ""},
		{"example.com.localhost:8080", "https://evil.example", "example.com:8080", "https://evil.example"},
		{"example.com.localhost:8080", "http://localhost.evil.example", "example.com:8080", "http://localhost.evil.example"},
		{"localhost:8080", "", "localhost:8080", ""},
		{"127.0.0.1:8080", "", "127.0.0.1:8080", ""},
	} {
		r := httptest.NewRequest("GET", "/arena", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got.Host != tc.wantHost || got.Header.Get("Origin") != tc.wantOrigin {
			t.Errorf("%s %s: host %q origin %q, want %q %q", tc.host, tc.origin, got.Host, got.Header.Get("Origin"), tc.wantHost, tc.wantOrigin)
		}
	}
}

func TestTakenPortIsReplacedAndSaid(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().(*net.TCPAddr).Port
	var log bytes.Buffer
	ln, err := listen(taken, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := ln.Addr().(*net.TCPAddr).Port
	if got == taken || !strings.Contains(log.String(), fmt.Sprintf("port %d is taken; using port %d instead", taken, got)) {
		t.Fatalf("port %d taken, got %d, said %q", taken, got, log.String())
	}
}

func TestNotADirectory(t *testing.T) {
	err := Run(context.Background(), Options{Root: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("got %v", err)
	}
}

// hoster dev serves exactly what production does: the files that went into
// hoster.server.js, tsconfig.json and .d.ts files answer the uniform 404;
// the page, an asset and the file the game's "public" names answer 200.
func TestDevKeepsServerCodePrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sites")
	if err := os.CopyFS(root, os.DirFS("../../test/testdata/private-files")); err != nil {
		t.Fatal(err)
	}
	port, _, _ := startDev(t, root, "example.com/vault")
	client := &http.Client{Transport: &http.Transport{DialContext: loopback(port)}}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(fmt.Sprintf("http://example.com.localhost:%d%s", port, path))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for _, file := range []string{"lib/rounds.ts", "tsconfig.json", "types/extra.d.ts", "hoster.client.d.ts", "hoster.server.js.map"} {
		if code, body := get("/vault/" + file); code != 404 || body != "404 page not found\n" {
			t.Errorf("GET /vault/%s: %d %q, want the uniform 404", file, code, body)
		}
	}
	for _, file := range []string{"index.html", "assets/sprite.png", "lib/shared.js"} {
		want, _ := os.ReadFile(filepath.Join(root, "example.com", "vault", filepath.FromSlash(file)))
		if code, body := get("/vault/" + file); code != 200 || body != string(want) {
			t.Errorf("GET /vault/%s: %d %q", file, code, body)
		}
	}
	if code, _ := get("/favicon.ico"); code != http.StatusNoContent {
		t.Errorf("GET /favicon.ico: %d", code)
	}
}
