package servercmd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/internal/waitfs"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// startServe runs serve on free loopback ports until the test ends, and
// returns once the games under the hosting root are loaded.
func startServe(t *testing.T, o serveOptions) (listen, ask string, logs *waitbuf.Buffer) {
	t.Helper()
	listen, ask, logs = startServeListening(t, o)
	if !logs.WaitFor(`msg="games loaded"`, 1, 30*time.Second) { // a hang guard
		t.Fatalf("the games never finished loading:\n%s", logs.String())
	}
	return listen, ask, logs
}

// startServeListening is startServe returning as soon as serve listens, the
// games loading in the background.
func startServeListening(t *testing.T, o serveOptions) (listen, ask string, logs *waitbuf.Buffer) {
	t.Helper()
	listen, ask, logs, _ = startServeControlled(t, o)
	return listen, ask, logs
}

// startServeStoppable is startServe with a stop: it stops serve as a
// signal does and returns once serve has returned.
func startServeStoppable(t *testing.T, o serveOptions) (listen, ask string, logs *waitbuf.Buffer, stop func()) {
	t.Helper()
	listen, ask, logs, stop = startServeControlled(t, o)
	if !logs.WaitFor(`msg="games loaded"`, 1, 30*time.Second) { // a hang guard
		t.Fatalf("the games never finished loading:\n%s", logs.String())
	}
	return listen, ask, logs, stop
}

func startServeControlled(t *testing.T, o serveOptions) (listen, ask string, logs *waitbuf.Buffer, stop func()) {
	t.Helper()
	o.Listen, o.AskListen = "127.0.0.1:0", "127.0.0.1:0"
	if o.Variant == 0 {
		o.Variant = 1
	}
	o.StatsInterval, o.GamelogInterval, o.ReloadDebounce, o.MaxUpload = time.Hour, time.Hour, 50*time.Millisecond, 1<<20
	// serve's defaults: its games in worker processes (this test program,
	// see TestMain), unless the test chose.
	if o.Isolation == "" {
		o.Isolation = defaultIsolation
	}
	if o.Memory == 0 {
		o.Memory, o.MaxMemory = defaultMemory, defaultMaxMemory
	}
	if o.WorkerIdle == 0 {
		o.WorkerIdle = defaultWorkerIdle
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs = waitbuf.New()
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, o, slog.New(slog.NewTextHandler(logs, nil)), func(l, a string) { ready <- [2]string{l, a} })
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve returned %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case addrs := <-ready:
		return addrs[0], addrs[1], logs, stop
	case err := <-done:
		t.Fatalf("serve stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	return
}

func TestServeReadsTokenOnce(t *testing.T) {
	root := t.TempDir()
	tok := strings.Repeat("ab", 32)
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte("  "+tok+"\n"), 0o600)
	listen, _, logs := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})

	get := func(tok string) int {
		req, _ := http.NewRequest("GET", "http://"+listen+api.PathTree, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(tok); code != 200 {
		t.Fatalf("tree with the token (whitespace trimmed): %d", code)
	}
	// Read once: a new token on disk is not picked up until a restart.
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte(strings.Repeat("cd", 32)), 0o600)
	if get(tok) != 200 || get(strings.Repeat("cd", 32)) != 404 {
		t.Fatal("the token file must be read once at start")
	}
	if strings.Contains(logs.String(), tok) {
		t.Fatal("the token reached the log")
	}
}

func TestServeWithoutTokenFileTurnsAPIOff(t *testing.T) {
	listen, _, logs := startServe(t, serveOptions{HostingRoot: t.TempDir(), LogsRoot: t.TempDir()})
	resp, err := http.Get("http://" + listen + api.PathVersion)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("version without a token file: %d, want the uniform 404", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "the API is off") {
		t.Fatalf("the operator is not told the API is off:\n%s", logs)
	}
}

func TestServeRefusesEmptyTokenFile(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte("\n \n"), 0o600)
	err := runServe(context.Background(), serveOptions{HostingRoot: root, Listen: "127.0.0.1:0", AskListen: "127.0.0.1:0", Variant: 1},
		slog.New(slog.DiscardHandler), nil)
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty token file: %v", err)
	}
}

func TestServeFlagErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve", "--variant", "3"}, nil, "--variant"},
		{[]string{"serve", "--listen", "nope"}, nil, "--listen"},
		{[]string{"serve", "--tls-cert", "x"}, nil, "--tls-key"},
		{[]string{"serve", "--reload-debounce", "0s"}, nil, "--reload-debounce"},
		{[]string{"serve", "--max-instances", "0"}, nil, "--max-instances"},
		{[]string{"serve", "--rooms-per-minute", "-1"}, nil, "--rooms-per-minute"},
		{[]string{"serve", "--max-instances", "50"}, nil, "--default-instances: 100 is above --max-instances (50)"},
		{[]string{"serve"}, map[string]string{"HOSTER_SERVER_SOCKETS_PER_ADDRESS": "0"}, "--sockets-per-address"},
		{[]string{"serve", "--cpus", "-1"}, nil, "--cpus: must be 0 (every core but one) or at least 0.01"},
		{[]string{"serve", "--cpus", "0.001"}, nil, "--cpus"},
		{[]string{"serve", "--bogus"}, nil, "unknown flag"},
		{[]string{"serve", "extra"}, nil, "unknown command"},
		{[]string{"bogus"}, nil, "unknown command"},
		{[]string{"init", "--http-port", "x"}, nil, "invalid argument"},
		{[]string{"serve"}, map[string]string{"HOSTER_SERVER_STATS_INTERVAL": "soon"}, "HOSTER_SERVER_STATS_INTERVAL"},
		{[]string{"serve"}, map[string]string{"HOSTER_SERVER_VARIANT": "9"}, "--variant"},
		{[]string{"serve", "--cluster-listen", "127.0.0.1:0", "--cluster-nats", "nats://x:4222"}, nil, "exclude each other"},
		{[]string{"serve", "--cluster-peers", "127.0.0.1:6222"}, nil, "need --cluster-listen or --cluster-nats"},
		{[]string{"serve", "--cluster-nats", "nats://x:4222", "--cluster-peers", "127.0.0.1:6222"}, nil, "embedded NATS's"},
		{[]string{"serve", "--cluster-listen", "127.0.0.1:0", "--cluster-tls-cert", "c"}, nil, "go together"},
		{[]string{"serve"}, map[string]string{"HOSTER_SERVER_CLUSTER_REPLICAS": "-1"}, "--cluster-replicas"},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		var out, errOut bytes.Buffer
		code := Main(tc.args, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want 2 mentioning %q", tc.args, tc.env, code, errOut.String(), tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}

// TestStopDuringUploadLeavesNoTemporary: a stop while an upload is still
// coming in cuts it off after the grace, removes its temporary file, and is
// a clean exit.
func TestStopDuringUploadLeavesNoTemporary(t *testing.T) {
	root := t.TempDir()
	tok := strings.Repeat("ab", 32)
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte(tok), 0o600)
	o := serveOptions{HostingRoot: root, LogsRoot: t.TempDir(), Listen: "127.0.0.1:0", AskListen: "127.0.0.1:0", Variant: 1,
		StatsInterval: time.Hour, GamelogInterval: time.Hour, ReloadDebounce: time.Hour, MaxUpload: 1 << 30,
		shutdownGrace: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, o, slog.New(slog.DiscardHandler), func(l, _ string) { ready <- l })
	}()
	listen := <-ready

	body, feed := io.Pipe()
	defer feed.Close()
	req, _ := http.NewRequest("PUT", "http://"+listen+api.PathFile+"?path=example.com/arena/big.bin", body)
	req.ContentLength = 1 << 29
	req.Header.Set("Authorization", "Bearer "+tok)
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	go feed.Write(make([]byte, 1<<20)) // part of the body, then nothing
	game := filepath.Join(root, api.GamesDir, "example.com/arena")
	temporaries := func() []string {
		m, _ := filepath.Glob(filepath.Join(game, ".big.bin.tmp-*"))
		return m
	}
	// The upload has started once its temporary is in the game's folder,
	// which the upload itself makes: the file system wakes the test.
	if err := waitfs.Until(game, func() bool { return len(temporaries()) > 0 }, 20*time.Second); err != nil {
		t.Fatalf("the upload never started: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a requested stop returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop with an upload in flight")
	}
	if m := temporaries(); len(m) > 0 {
		t.Fatalf("temporaries left after the stop: %v", m)
	}
}

// rawRequest sends head (and then body) on a fresh connection and returns
// it with its reader; reads end after a generous guard, so a hang fails the
// test instead of stalling it.
func rawRequest(t *testing.T, addr, head, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, head+body); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// TestStrangersTrickledBodyAnsweredAtOnce: a PUT with a wrong token whose
// body trickles in gets the uniform 404 at once, and its connection is
// closed, without waiting for the body.
func TestStrangersTrickledBodyAnsweredAtOnce(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte(strings.Repeat("ab", 32)), 0o600)
	listen, _, _ := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})
	for _, te := range []string{"Content-Length: 100000", "Transfer-Encoding: chunked"} {
		head := "PUT " + api.PathFile + "?path=a.com/g/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
			strings.Repeat("cd", 32) + "\r\n" + te + "\r\n\r\n"
		first := "x"
		if strings.HasPrefix(te, "Transfer") {
			first = "1\r\nx\r\n"
		}
		_, br := rawRequest(t, listen, head, first) // and nothing more
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", te, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 404 {
			t.Fatalf("%s: status %d", te, resp.StatusCode)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("%s: the connection was not closed: %v", te, err)
		}
	}
}

// TestIdleConnectionsClosed: a kept-alive connection that goes quiet is
// closed by the server.
func TestIdleConnectionsClosed(t *testing.T) {
	o := serveOptions{HostingRoot: t.TempDir(), LogsRoot: t.TempDir(), idleTimeout: 50 * time.Millisecond}
	listen, _, _ := startServe(t, o)
	_, br := rawRequest(t, listen, "GET /x/ HTTP/1.1\r\nHost: a.com\r\n\r\n", "")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.Close {
		t.Fatal("the server closed after the answer; the test needs a kept-alive connection")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection was not closed: %v", err)
	}
}

// TestServeAnswersWhileAGameLoadSpins: games load after the server listens,
// each under the hook budget: a game whose load spins (its top-level code
// makes reading its registry loop) never keeps the server from answering
// HTTP; it is cut off, logged as not loaded, and the other games load and
// play. (Before, serve loaded every game before listening, and this one
// forever.)
func TestServeAnswersWhileAGameLoadSpins(t *testing.T) {
	root := t.TempDir()
	games := filepath.Join(root, api.GamesDir)
	for _, domain := range []string{"example.com", "spin.example"} {
		if err := os.CopyFS(filepath.Join(games, domain, "arena"), os.DirFS("../../examples/sites/example.com/arena")); err != nil {
			t.Fatal(err)
		}
	}
	create := filepath.Join(games, "spin.example", "arena", "hoster-instance", "create.js")
	src, _ := os.ReadFile(create)
	os.WriteFile(create, append([]byte("Object.prototype.toJSON = function () { for (;;) {} };\n"), src...), 0o644)
	if res, err := gen.Generate(games); err != nil || res.Failed() {
		t.Fatalf("generating the games: %v %v", err, res.Problems())
	}
	listen, ask, logs := startServeListening(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})
	resp, err := http.Get("http://" + ask + "/ask?domain=nobody.example")
	if err != nil {
		t.Fatalf("the server does not answer while the games load: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("ask for an unknown domain: %s", resp.Status)
	}
	if !logs.WaitFor(`msg="games loaded"`, 1, 30*time.Second) { // a hang guard
		t.Fatalf("the games never finished loading:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg="game not loaded; the running version, if any, keeps serving" game=spin.example/arena`) ||
		!strings.Contains(logs.String(), "create.js:1") {
		t.Fatalf("the spinning load is not logged with its file:\n%s", logs.String())
	}
	req, _ := http.NewRequest("GET", "http://"+listen+"/arena/hoster.client.js", nil)
	req.Host = "example.com"
	if resp, err := http.DefaultTransport.RoundTrip(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the other game is not served: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// With --access-log, every request on --listen is written to
// {logs_root}/web-logs/access.log, the Sync API's as the games'.
func TestServeWritesTheAccessLog(t *testing.T) {
	logsRoot := t.TempDir()
	listen, _, _ := startServe(t, serveOptions{HostingRoot: t.TempDir(), LogsRoot: logsRoot, AccessLog: true})
	for _, path := range []string{"/api/tree", "/nothing/"} {
		resp, err := http.Get("http://" + listen + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	dir := filepath.Join(logsRoot, api.WebLogsDir)
	logged := func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, api.AccessLogName))
		return strings.Contains(string(b), `"uri":"/api/tree"`) && strings.Contains(string(b), `"uri":"/nothing/"`)
	}
	if err := waitfs.Until(dir, logged, 20*time.Second); err != nil { // a hang guard
		b, _ := os.ReadFile(filepath.Join(dir, api.AccessLogName))
		t.Fatalf("the access log never held both requests: %v\n%s", err, b)
	}
}
