package server

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

type env struct {
	url   string
	games string
	srv   *Server
}

func start(t *testing.T, opts Options) *env {
	t.Helper()
	if opts.GamesRoot == "" {
		opts.GamesRoot = filepath.Join(t.TempDir(), "hoster-games")
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return &env{url: ts.URL, games: opts.GamesRoot, srv: s}
}

func (e *env) do(t *testing.T, method, path, tok string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func fileQuery(p string) string { return api.PathFile + "?path=" + url.QueryEscape(p) }

// dump renders everything a client can see of a response but its Date.
func dump(t *testing.T, resp *http.Response) string {
	t.Helper()
	resp.Header.Del("Date")
	b, err := httputil.DumpResponse(resp, true)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// probe is one request that must get the uniform 404.
type probe struct {
	name, method, path, tok string
	e                       *env
}

func TestUniform404(t *testing.T) {
	for _, variant := range []api.Variant{api.Variant1, api.Variant2} {
		t.Run(fmt.Sprint("variant", variant), func(t *testing.T) {
			e := start(t, Options{Token: token, Variant: variant})
			off := start(t, Options{Variant: variant}) // no token file: API off
			cases := []probe{
				{"no token", "GET", api.PathTree, "", e},
				{"wrong token", "GET", api.PathTree, "nope", e},
				{"wrong token same length", "GET", api.PathTree, strings.Repeat("f", 64), e},
				{"unknown route", "GET", "/api/nothing", token, e},
				{"unknown route no token", "GET", "/api/nothing", "", e},
				{"wrong version prefix", "GET", "/api/v2/logs", token, e},
				{"v0 prefix", "GET", "/api/v0/stats", token, e},
				{"wrong method", "POST", api.PathTree, token, e},
				{"wrong method on version", "DELETE", api.PathVersion, "", e},
				{"trailing slash", "GET", api.PathTree + "/", token, e},
				{"double slash", "GET", "/api//tree", token, e},
				{"encoded slash", "GET", "/api%2Ftree", token, e},
				{"bare /api", "GET", "/api", token, e},
				{"API off: version", "GET", api.PathVersion, "", off},
				{"API off: tree with a token", "GET", api.PathTree, token, off},
			}
			if variant == api.Variant2 {
				cases = append(cases,
					probe{"v2 unsafe put", "PUT", fileQuery("../x/y"), token, e},
					probe{"v2 unsafe delete", "DELETE", fileQuery("a.com"), token, e})
			}
			var first string
			for _, c := range cases {
				got := dump(t, c.e.do(t, c.method, c.path, c.tok, nil))
				if !strings.HasPrefix(got, "HTTP/1.1 404 Not Found") {
					t.Fatalf("%s: not a 404:\n%s", c.name, got)
				}
				if first == "" {
					first = got
				} else if got != first {
					t.Errorf("%s: 404 differs from the others:\n%s\nvs\n%s", c.name, got, first)
				}
			}
		})
	}
}

func TestVersionNeedsNoToken(t *testing.T) {
	e := start(t, Options{Token: token})
	resp := e.do(t, "GET", api.PathVersion, "", nil)
	var v api.VersionInfo
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&v) != nil || v.API != api.Version {
		t.Fatalf("version: %d %+v", resp.StatusCode, v)
	}
}

type result struct {
	status int
	body   map[string]any
}

func call(t *testing.T, e *env, method, path string, body io.Reader) result {
	t.Helper()
	resp := e.do(t, method, path, token, body)
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", method, path, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return result{resp.StatusCode, m}
}

func TestSyncAPIBothVariants(t *testing.T) {
	type want struct {
		status int
		body   string // JSON
	}
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		body     string
		v1, v2   want
		fileWant string // content expected at path afterwards ("-" absent)
	}{
		{"put", "PUT", "example.com/arena/a.js", "hello", want{200, `{"size":5}`}, want{200, `{"size":5,"ok":true}`}, "hello"},
		{"put deep creates parents", "PUT", "example.com/arena/x/y/z.txt", "zz", want{200, `{"size":2}`}, want{200, `{"size":2,"ok":true}`}, "zz"},
		{"put empty file", "PUT", "example.com/arena/empty", "", want{200, `{"size":0}`}, want{200, `{"size":0,"ok":true}`}, ""},
		{"put traversal", "PUT", "../escape/x/y", "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"put absolute", "PUT", "/etc/x/y", "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"put backslash", "PUT", `a.com\g\x`, "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"put NUL", "PUT", "a.com/g/x\x00y", "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"put shallow", "PUT", "example.com/file", "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"put empty path", "PUT", "", "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"put dot segment", "PUT", "a.com/./g/x", "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"put not UTF-8", "PUT", "example.com/arena/bad\xff.txt", "x", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"delete not UTF-8", "DELETE", "example.com/arena/bad\xff.txt", "", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"delete absent", "DELETE", "example.com/arena/none", "", want{200, `{"deleted":true}`}, want{200, `{"ok":true}`}, "-"},
		{"delete shallow", "DELETE", "example.com", "", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"delete root", "DELETE", ".", "", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
		{"delete traversal", "DELETE", "example.com/../..", "", want{400, `{"error":"invalid path"}`}, want{404, ""}, "-"},
	} {
		for _, variant := range []api.Variant{api.Variant1, api.Variant2} {
			t.Run(fmt.Sprintf("%s/v%d", tc.name, variant), func(t *testing.T) {
				e := start(t, Options{Token: token, Variant: variant})
				w := tc.v1
				if variant == api.Variant2 {
					w = tc.v2
				}
				resp := e.do(t, tc.method, fileQuery(tc.path), token, strings.NewReader(tc.body))
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != w.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, w.status, body)
				}
				if w.body != "" && strings.TrimSpace(string(body)) != w.body {
					t.Fatalf("body %s, want %s", body, w.body)
				}
				if tc.fileWant != "-" {
					got, err := os.ReadFile(filepath.Join(e.games, tc.path))
					if err != nil || string(got) != tc.fileWant {
						t.Fatalf("file %q = %q, %v", tc.path, got, err)
					}
				}
				// Nothing was created outside the games root.
				entries, _ := os.ReadDir(filepath.Dir(e.games))
				if len(entries) != 1 {
					t.Fatalf("something appeared beside the games root: %d entries", len(entries))
				}
			})
		}
	}
}

func TestPutOverwriteTreeAndSubtreeDelete(t *testing.T) {
	e := start(t, Options{Token: token})
	call(t, e, "PUT", fileQuery("example.com/arena/a.js"), strings.NewReader("one"))
	call(t, e, "PUT", fileQuery("example.com/arena/a.js"), strings.NewReader("two"))
	call(t, e, "PUT", fileQuery("example.com/arena/sub/b.js"), strings.NewReader("b"))
	resp := e.do(t, "GET", api.PathTree, token, nil)
	var tree api.Tree
	json.NewDecoder(resp.Body).Decode(&tree)
	if len(tree) != 2 || tree["example.com/arena/a.js"] != "3fc4ccfe745870e2c0d99f71f30ff0656c8dedd41cc1d7d3d376b0dbe685e2f3" {
		t.Fatalf("tree %v", tree)
	}
	if r := call(t, e, "DELETE", fileQuery("example.com/arena"), nil); r.status != 200 || r.body["deleted"] != true {
		t.Fatalf("delete game: %+v", r)
	}
	resp = e.do(t, "GET", api.PathTree, token, nil)
	b, _ := io.ReadAll(resp.Body)
	if strings.TrimSpace(string(b)) != "{}" {
		t.Fatalf("empty tree must be {}, got %s", b)
	}
}

func TestUploadLimit(t *testing.T) {
	for _, variant := range []api.Variant{api.Variant1, api.Variant2} {
		e := start(t, Options{Token: token, Variant: variant, MaxUpload: 100})
		os.MkdirAll(filepath.Join(e.games, "a.com", "g"), 0o755)
		os.WriteFile(filepath.Join(e.games, "a.com", "g", "f"), []byte("old"), 0o644)
		// Known length over the limit, and a chunked body over the limit.
		for _, body := range []io.Reader{bytes.NewReader(make([]byte, 101)), io.MultiReader(strings.NewReader(strings.Repeat("x", 150)))} {
			r := call(t, e, "PUT", fileQuery("a.com/g/f"), body)
			msg, _ := r.body["error"].(string)
			if variant == api.Variant1 && (r.status != 413 || !strings.Contains(msg, "limit")) {
				t.Fatalf("v1 oversized: %+v", r)
			}
			if variant == api.Variant2 && (r.status != 200 || r.body["ok"] != false || !strings.Contains(msg, "limit")) {
				t.Fatalf("v2 oversized: %+v", r)
			}
		}
		if got, _ := os.ReadFile(filepath.Join(e.games, "a.com", "g", "f")); string(got) != "old" {
			t.Fatalf("an oversized upload changed the file to %q", got)
		}
		if r := call(t, e, "PUT", fileQuery("a.com/g/f"), bytes.NewReader(make([]byte, 100))); r.status != 200 {
			t.Fatalf("an upload at the limit: %+v", r)
		}
	}
}

func TestWriteFailureShapes(t *testing.T) {
	for _, variant := range []api.Variant{api.Variant1, api.Variant2} {
		e := start(t, Options{Token: token, Variant: variant})
		// A directory where the file should go makes the rename fail.
		os.MkdirAll(filepath.Join(e.games, "a.com", "g", "dir", "x"), 0o755)
		r := call(t, e, "PUT", fileQuery("a.com/g/dir"), strings.NewReader("x"))
		if variant == api.Variant1 && (r.status != 500 || r.body["error"] == "") {
			t.Fatalf("v1 failed write: %+v", r)
		}
		if variant == api.Variant2 && (r.status != 200 || r.body["ok"] != false || r.body["error"] == "") {
			t.Fatalf("v2 failed write: %+v", r)
		}
		if msg, _ := r.body["error"].(string); strings.Contains(msg, e.games) {
			t.Errorf("the error reveals the server's directory: %s", msg)
		}
	}
}

func TestCutUploadKeepsOldFile(t *testing.T) {
	games := filepath.Join(t.TempDir(), "hoster-games")
	s, err := New(Options{GamesRoot: games, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	// The server closes a connection only once its handler has returned.
	closed := make(chan string, 8)
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- c.RemoteAddr().String()
		}
	}
	ts.Start()
	t.Cleanup(func() { ts.Close(); s.Close() })
	e := &env{url: ts.URL, games: games, srv: s}
	call(t, e, "PUT", fileQuery("a.com/g/f"), strings.NewReader("old"))
	// Promise 1 MB, send part, hang up.
	u, _ := url.Parse(e.url)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 1000000\r\n\r\n", fileQuery("a.com/g/f"), token)
	conn.Write(bytes.Repeat([]byte("n"), 50000))
	conn.Close()
	for addr := range closed {
		if addr == conn.LocalAddr().String() {
			break
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(e.games, "a.com", "g")); len(entries) != 1 {
		t.Fatalf("temporary file left after a cut upload: %v", entries)
	}
	if got, _ := os.ReadFile(filepath.Join(e.games, "a.com", "g", "f")); string(got) != "old" {
		t.Fatalf("cut upload changed the file to %q", got)
	}
}

func TestReloadsAfterBurst(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	// The quiet period never ends by itself: Close ends it, so how many
	// reloads the burst gave does not depend on the machine's speed.
	e := start(t, Options{Token: token, ReloadDebounce: time.Hour, OnReload: func(d, g string) {
		mu.Lock()
		got[d+"/"+g]++
		mu.Unlock()
	}})
	games := []string{"a.com/x", "a.com/y", "b.org/z"}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < 500; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p := fmt.Sprintf("%s/f%d", games[i%3], i%7)
			method := "PUT"
			if i%10 == 9 {
				method = "DELETE"
			}
			resp := e.do(t, method, fileQuery(p), token, strings.NewReader("x"))
			io.Copy(io.Discard, resp.Body)
		}()
	}
	wg.Wait()
	// Refused requests reload nothing.
	e.do(t, "PUT", fileQuery("../x/y/z"), token, strings.NewReader("x"))
	e.do(t, "PUT", fileQuery("c.com/g/f"), "wrong", strings.NewReader("x"))
	mu.Lock()
	if len(got) != 0 {
		t.Fatalf("reloads %v inside the quiet period", got)
	}
	mu.Unlock()
	e.srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(games) {
		t.Fatalf("reloads %v, want one for each of %v", got, games)
	}
	for _, g := range games {
		if got[g] != 1 {
			t.Fatalf("reloads %v, want one per game", got)
		}
	}
}

func TestConcurrentUploadsThroughHTTP(t *testing.T) {
	e := start(t, Options{Token: token})
	want := map[string][]byte{}
	for i := 0; i < 64; i++ {
		want[fmt.Sprintf("d%d.com/g/f%d", i%4, i)] = bytes.Repeat([]byte(fmt.Sprint(i)), 3000+i*1234)
	}
	var wg sync.WaitGroup
	for p, body := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := e.do(t, "PUT", fileQuery(p), token, bytes.NewReader(body))
			if resp.StatusCode != 200 {
				t.Errorf("PUT %s: %d", p, resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	resp := e.do(t, "GET", api.PathTree, token, nil)
	var tree api.Tree
	json.NewDecoder(resp.Body).Decode(&tree)
	if len(tree) != 64 {
		t.Fatalf("tree has %d files, want 64", len(tree))
	}
	hexRE := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for p, body := range want {
		if !hexRE.MatchString(tree[p]) || tree[p] != shaHex(body) {
			t.Errorf("%s: %s", p, tree[p])
		}
	}
}

func TestExtraRoutesAndGames(t *testing.T) {
	games := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "game:"+r.URL.Path) })
	e := start(t, Options{Token: token, Games: games, Routes: map[string]http.Handler{
		"GET /api/v1/logs": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "logs") }),
	}})
	if b, _ := io.ReadAll(e.do(t, "GET", "/api/v1/logs", token, nil).Body); string(b) != "logs" {
		t.Fatalf("extra route: %s", b)
	}
	if r := e.do(t, "GET", "/api/v1/logs", "", nil); r.StatusCode != 404 {
		t.Fatal("extra routes must need the token")
	}
	if b, _ := io.ReadAll(e.do(t, "GET", "/arena", "", nil).Body); string(b) != "game:/arena" {
		t.Fatalf("games handler: %s", b)
	}
	if _, err := New(Options{GamesRoot: t.TempDir(), Routes: map[string]http.Handler{"GET /elsewhere": games}}); err == nil {
		t.Fatal("a route outside /api/ must be refused")
	}
}

// TestStalledUploadCutOff: an authenticated upload whose body stops coming
// is cut off once it has stalled for BodyStall, leaving no temporary file,
// whether it is a single file or a batch.
func TestStalledUploadCutOff(t *testing.T) {
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	tw.WriteHeader(&tar.Header{Name: "example.com/arena/slow.bin", Size: 1 << 20, Mode: 0o644, Typeflag: tar.TypeReg})
	for name, route := range map[string]struct {
		target string
		start  []byte
		length int64
	}{
		"file":  {fileQuery("example.com/arena/slow.bin"), nil, 1 << 20},
		"batch": {api.PathFiles, hdr.Bytes(), 2 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			e := start(t, Options{Token: token, BodyStall: 50 * time.Millisecond})
			body, feed := io.Pipe()
			defer feed.Close()
			go feed.Write(append(route.start, "the first bytes, then nothing"...))
			req, _ := http.NewRequest("PUT", e.url+route.target, body)
			req.ContentLength = route.length
			req.Header.Set("Authorization", "Bearer "+token)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard only
			defer cancel()
			context.AfterFunc(ctx, func() { feed.CloseWithError(ctx.Err()) }) // else the transport waits on the body
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			if ctx.Err() != nil {
				t.Fatal("the stalled upload was never cut off")
			}
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					t.Fatal("a stalled upload succeeded")
				}
			}
			// The handler's end (and its temporary's removal) follows the answer.
			e.srv.store.Close()
			m, _ := filepath.Glob(filepath.Join(e.games, "example.com/arena/.slow.bin.tmp-*"))
			if len(m) > 0 {
				t.Fatalf("temporary left: %v", m)
			}
		})
	}
}

// TestFailuresTellAShortCause: a write or delete the store cannot do is
// answered, in each variant's form, with a short cause a client can act on;
// the server's own paths and temporary names go to its log only.
func TestFailuresTellAShortCause(t *testing.T) {
	for _, v := range []api.Variant{api.Variant1, api.Variant2} {
		t.Run(fmt.Sprint("variant", v), func(t *testing.T) {
			e := start(t, Options{Token: token, Variant: v})
			if resp := e.do(t, "PUT", fileQuery("a.com/g/x"), token, strings.NewReader("file")); resp.StatusCode != 200 {
				t.Fatalf("first write: %s", dump(t, resp))
			}
			// x is a file: nothing can be written below it.
			resp := e.do(t, "PUT", fileQuery("a.com/g/x/y"), token, strings.NewReader("below a file"))
			body := dump(t, resp)
			wantStatus := map[api.Variant]int{api.Variant1: 500, api.Variant2: 200}[v]
			if resp.StatusCode != wantStatus || !strings.Contains(body, `"error":"a file and a folder of the same name stand in each other's way (not a directory)"`) {
				t.Fatalf("answer:\n%s", body)
			}
			if strings.Contains(body, ".tmp-") || strings.Contains(body, e.games) || strings.Contains(body, "a.com/g") {
				t.Fatalf("the answer names the server's files:\n%s", body)
			}
			// A link planted where the file would go is not written over.
			os.Symlink("x", filepath.Join(e.games, "a.com/g/link"))
			resp = e.do(t, "PUT", fileQuery("a.com/g/link"), token, strings.NewReader("over a link"))
			if body := dump(t, resp); resp.StatusCode != wantStatus || !strings.Contains(body, `"error":"a link or a special file stands where the file would go"`) {
				t.Fatalf("answer over a link:\n%s", body)
			}
		})
	}
}

// TestFullDiskToldByCause: a write that fails because the disk is full
// (ENOSPC) carries the machine-readable cause "no-space" beside its words,
// in each variant's form, alone and in a batch; a failure for another
// reason carries none. The games root is a small tmpfs (root only).
func TestFullDiskToldByCause(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	big := strings.Repeat("x", 2<<20)
	for _, v := range []api.Variant{api.Variant1, api.Variant2} {
		t.Run(fmt.Sprint("variant", v), func(t *testing.T) {
			games := t.TempDir()
			if err := syscall.Mount("tmpfs", games, "tmpfs", 0, "size=1m"); err != nil {
				t.Skipf("mounting a tmpfs: %v", err)
			}
			t.Cleanup(func() { syscall.Unmount(games, syscall.MNT_DETACH) })
			e := start(t, Options{Token: token, Variant: v, GamesRoot: games})

			r := call(t, e, "PUT", fileQuery("a.com/g/big.bin"), strings.NewReader(big))
			wantStatus := map[api.Variant]int{api.Variant1: 500, api.Variant2: 200}[v]
			if r.status != wantStatus || r.body["cause"] != api.CauseNoSpace || r.body["error"] == "" {
				t.Fatalf("a write on a full disk: %+v", r)
			}

			var res api.BatchResult
			resp := e.do(t, "PUT", api.PathFiles, token, bytes.NewReader(tarOf(t, [2]string{"a.com/g/big2.bin", big})))
			if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || len(res.Files) != 1 {
				t.Fatalf("batch answer: %v %+v", err, res)
			}
			if f := res.Files[0]; f.Cause != api.CauseNoSpace || f.Error == "" {
				t.Fatalf("a batch's file on a full disk: %+v", f)
			}

			// Another failure tells no cause: x is a file, so nothing goes below it.
			if r := call(t, e, "PUT", fileQuery("a.com/g/x"), strings.NewReader("x")); r.status != 200 {
				t.Fatalf("a small write: %+v", r)
			}
			if r := call(t, e, "PUT", fileQuery("a.com/g/x/y"), strings.NewReader("y")); r.body["error"] == "" || r.body["cause"] != nil {
				t.Fatalf("a failure not for space: %+v", r)
			}
		})
	}
}
