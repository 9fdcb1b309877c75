package accesslog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

func TestCaddyShapedLines(t *testing.T) {
	root := t.TempDir()
	l, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	up := websocket.Upgrader{}
	h := l.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				t.Errorf("upgrade through the middleware: %v", err)
				return
			}
			c.Close()
			return
		}
		io.ReadAll(r.Body)
		w.Header().Set("Set-Cookie", "s=1")
		w.WriteHeader(201)
		io.WriteString(w, "hello")
	}))
	// A client sees the response before the middleware writes its line, so
	// the test waits for both handlers to return before reading the log.
	var served sync.WaitGroup
	served.Add(2)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer served.Done()
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	req, _ := http.NewRequest("PUT", ts.URL+"/api/file?path=a.com/g/x", strings.NewReader("body!"))
	req.Host = "example.com"
	req.Header.Set("Authorization", "Bearer secret-token")
	req.Header.Set("X-Forwarded-For", "198.51.100.1") // from loopback: a proxy's word, believed
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("websocket through the access log: %v", err)
	}
	c.Close()
	served.Wait()
	l.Close()

	f, _ := os.Open(filepath.Join(root, "web-logs", "access.log"))
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []map[string]any
	for sc.Scan() {
		if strings.Contains(sc.Text(), "secret-token") {
			t.Fatal("the token reached the access log")
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	m := lines[0]
	req0 := m["request"].(map[string]any)
	hdr := req0["headers"].(map[string]any)
	if m["msg"] != "handled request" || m["level"] != "info" || !strings.HasPrefix(m["logger"].(string), "http.log.access") ||
		req0["host"] != "example.com" || req0["method"] != "PUT" || req0["uri"] != "/api/file?path=a.com/g/x" ||
		m["status"] != 201.0 || m["size"] != 5.0 || m["bytes_read"] != 5.0 || req0["remote_ip"] != "127.0.0.1" ||
		req0["client_ip"] != "198.51.100.1" ||
		hdr["Authorization"].([]any)[0] != "REDACTED" || m["resp_headers"].(map[string]any)["Set-Cookie"].([]any)[0] != "REDACTED" {
		t.Fatalf("not Caddy's shape: %v", m)
	}
	for _, k := range []string{"ts", "duration", "user_id"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	if lines[1]["status"] != 101.0 {
		t.Errorf("the upgrade logged status %v", lines[1]["status"])
	}
	if l.out.MaxSize != 64 || l.out.MaxBackups != 50 || l.out.MaxAge != 90 || l.out.Compress {
		t.Errorf("rolling settings %+v are not the contract's", l.out)
	}
}

// TestLineIsBounded: a 1 MB query string and huge headers make a line of a
// few KiB, with the cut fields marked.
func TestLineIsBounded(t *testing.T) {
	root := t.TempDir()
	l, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := httptest.NewRequest("GET", "/g/?q="+strings.Repeat("é", 512<<10), nil)
	r.Host = strings.Repeat("h", 100000)
	for i := range 200 {
		r.Header.Add(fmt.Sprintf("X-H%03d", i), strings.Repeat("v", 10000))
	}
	l.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(httptest.NewRecorder(), r)
	b, err := os.ReadFile(filepath.Join(root, "web-logs", "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > (MaxHeaders+4)*(MaxField+64) {
		t.Fatalf("one line is %d bytes", len(b))
	}
	var ln line
	if err := json.Unmarshal(b, &ln); err != nil {
		t.Fatalf("not one JSON line: %v", err)
	}
	if !strings.HasSuffix(ln.Request.URI, "…") || len(ln.Request.URI) > MaxField+len("…") || !utf8.ValidString(ln.Request.URI) {
		t.Fatalf("uri not clipped: %d bytes", len(ln.Request.URI))
	}
	if len(ln.Request.Headers) != MaxHeaders {
		t.Fatalf("%d headers kept", len(ln.Request.Headers))
	}
}

// A handler that holds its request's line (a socket handed to another
// process lives on past it) has it written when it releases it, once,
// whichever of the release and the handler's return comes last.
func TestHeldLine(t *testing.T) {
	root := t.TempDir()
	l, err := New(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := func() int {
		b, _ := os.ReadFile(filepath.Join(root, "web-logs", "access.log"))
		return strings.Count(string(b), "\n")
	}
	var release func()
	h := l.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release = Hold(r)
		if r.URL.Path == "/early" {
			release() // the socket ended before its handler returned
		}
		w.WriteHeader(http.StatusSwitchingProtocols)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/held", nil))
	if n := lines(); n != 0 {
		t.Fatalf("%d lines written while the request was held, want 0", n)
	}
	release()
	release()
	if n := lines(); n != 1 {
		t.Fatalf("%d lines written once the request was released (twice), want 1", n)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/early", nil))
	if n := lines(); n != 2 {
		t.Fatalf("%d lines after a request released before its handler returned, want 2", n)
	}
	Hold(httptest.NewRequest("GET", "/", nil))() // no middleware: nothing to hold
}
