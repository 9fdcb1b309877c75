package pages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hoster-dev/hoster/pkg/notfound"
	"github.com/hoster-dev/hoster/pkg/store"
)

// fixture is a games root with one loaded game, example.com/arena, written
// through the store as a sync writes it, and the handler of everything
// outside /api in front of a stand-in for the runtime.
type fixture struct {
	dir    string
	st     *store.Store
	files  *Files
	h      http.Handler
	loaded map[string]bool
	mu     sync.Mutex
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "games"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{dir: dir, st: st, loaded: map[string]bool{"example.com/arena": true}}
	f.files = New(Options{Store: st, Loaded: func(d, g string) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.loaded[d+"/"+g]
	}})
	t.Cleanup(f.files.Close)
	runtime := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Runtime", "yes")
		w.WriteHeader(http.StatusTeapot)
	})
	f.h = f.files.Route(runtime)
	for name, body := range map[string]string{
		"index.html":                       "<!doctype html><title>arena</title>",
		"hoster-game.json":                 `{"tickRate":20,"sendRate":10,"capacity":4,"origins":["*"],"public":["lib/shared.js"]}`,
		"hoster.server.js":                 "var secret = 1;",
		"hoster.server.js.map":             `{"version":3,"sources":["lib/rounds.ts","lib/shared.js","hoster-commands/move/run.js","hoster-registry.js"]}`,
		"lib/rounds.ts":                    "export const rounds = 3;",
		"lib/shared.js":                    "export const shared = 1;",
		"tsconfig.json":                    "{}",
		"types/game.d.ts":                  "declare const x: number;",
		"hoster.client.js":                 "var Hoster;",
		"hoster-instance/create.js":        "export default function () {}",
		"hoster-player/fields.json":        "{}",
		"hoster-entities/coin/fields.json": "{}",
		"hoster-commands/move/run.js":      "export default function () {}",
		"hoster-commands/move/args.json":   "{}",
		"_tests/a.test.js":                 "test",
		"lib/_private.js":                  "private",
		"lib/index.html":                   "lib index",
		"lib/app.js":                       "console.log(1)",
		"assets/sprite.png":                "\x89PNG....",
		"assets/Song.OGG":                  "OggS",
		"data.unknownext":                  "?",
	} {
		f.write(t, "example.com/arena/"+name, body)
	}
	f.write(t, "example.com/broken/index.html", "not loaded")
	return f
}

func (f *fixture) write(t testing.TB, rel, body string) {
	t.Helper()
	if _, err := f.st.Write(rel, strings.NewReader(body), 0); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) do(method, host, target string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Host = host
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// uniform404 is what every miss looks like.
func uniform404() *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	notfound.Write(w)
	return w
}

func TestServesAPublicFile(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ target, body, ctype string }{
		{"/arena/", "<!doctype html><title>arena</title>", "text/html; charset=utf-8"},
		{"/arena/index.html", "<!doctype html><title>arena</title>", "text/html; charset=utf-8"},
		{"/arena/lib/", "lib index", "text/html; charset=utf-8"},
		{"/arena/lib/app.js", "console.log(1)", "text/javascript; charset=utf-8"},
		{"/arena/hoster.client.js", "var Hoster;", "text/javascript; charset=utf-8"},
		{"/arena/assets/sprite.png", "\x89PNG....", "image/png"},
		{"/arena/assets/Song.OGG", "OggS", "audio/ogg"},
		{"/arena/data.unknownext", "?", "application/octet-stream"},
	} {
		// Host selects the domain, whatever its case, port or final dot.
		for _, host := range []string{"example.com", "Example.COM:8443", "example.com."} {
			w := f.do("GET", host, tc.target, nil)
			if w.Code != 200 || w.Body.String() != tc.body {
				t.Errorf("GET %s %s: %d %q, want 200 %q", host, tc.target, w.Code, w.Body, tc.body)
				continue
			}
			h := w.Header()
			if h.Get("Content-Type") != tc.ctype || h.Get("X-Content-Type-Options") != "nosniff" ||
				h.Get("Cache-Control") != "no-cache" || h.Get("ETag") != `"`+sum(tc.body)+`"` ||
				h.Get("Last-Modified") == "" || h.Get("Accept-Ranges") != "bytes" {
				t.Errorf("GET %s: headers %v", tc.target, h)
			}
		}
	}
	w := f.do("HEAD", "example.com", "/arena/lib/app.js", nil)
	if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") != "14" || w.Header().Get("ETag") != `"`+sum("console.log(1)")+`"` {
		t.Errorf("HEAD: %d %q %v", w.Code, w.Body, w.Header())
	}
}

func TestRoutesTheSocketAndTheRedirect(t *testing.T) {
	f := newFixture(t)
	w := f.do("GET", "example.com", "/arena?room=ab1", nil)
	if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/arena/?room=ab1" {
		t.Errorf("plain GET /arena: %d %v", w.Code, w.Header())
	}
	for _, tc := range []struct {
		method, target string
		header         http.Header
	}{
		{"GET", "/arena", http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}},
		{"POST", "/arena", nil},
	} {
		if w := f.do(tc.method, "example.com", tc.target, tc.header); w.Header().Get("X-Runtime") != "yes" {
			t.Errorf("%s %s did not reach the runtime: %d", tc.method, tc.target, w.Code)
		}
	}
	// A game that is not loaded is not redirected either.
	for _, target := range []string{"/broken", "/nothing", "/"} {
		if w := f.do("GET", "example.com", target, nil); w.Code != 404 {
			t.Errorf("GET %s: %d, want 404", target, w.Code)
		}
	}
}

func TestNeverServed(t *testing.T) {
	f := newFixture(t)
	// Outside the game folder: a file beside the games root, another game,
	// and symlinks to them.
	outside := filepath.Join(f.dir, "outside.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	gameDir := filepath.Join(f.dir, "games", "example.com", "arena")
	f.write(t, "example.com/other/index.html", "other game")
	f.mu.Lock()
	f.loaded["example.com/other"] = true
	f.mu.Unlock()
	for name, target := range map[string]string{
		"leak.txt":         outside,
		"leakdir":          f.dir,
		"otherdir":         filepath.Join(f.dir, "games", "example.com", "other"),
		"relleak":          "../../../outside.txt",
		"config-link.json": filepath.Join(gameDir, "hoster-game.json"),
		"server-link.js":   "hoster.server.js",
		"code":             "hoster-commands",
		"libdir":           "lib",
	} {
		if err := os.Symlink(target, filepath.Join(gameDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	want := uniform404()
	for _, tc := range []struct{ method, host, target string }{
		{"GET", "example.com", "/arena/hoster-game.json"},
		{"GET", "example.com", "/arena/hoster.server.js"},
		{"HEAD", "example.com", "/arena/hoster.server.js"},
		{"GET", "example.com", "/arena/hoster.server.js.map"},
		{"GET", "example.com", "/arena/hoster-instance/create.js"},
		{"GET", "example.com", "/arena/hoster-player/fields.json"},
		{"GET", "example.com", "/arena/hoster-entities/coin/fields.json"},
		{"GET", "example.com", "/arena/hoster-commands/move/run.js"},
		{"GET", "example.com", "/arena/hoster-commands/"},
		{"GET", "example.com", "/arena/_tests/a.test.js"},
		{"GET", "example.com", "/arena/lib/_private.js"},
		{"GET", "example.com", "/arena/.hidden"},
		{"GET", "example.com", "/arena/lib/.env"},
		{"GET", "example.com", "/arena/missing.js"},
		{"GET", "example.com", "/arena/assets"}, // a folder without an index
		{"GET", "example.com", "/arena/assets/"},
		{"GET", "example.com", "/arena/../outside.txt"},
		{"GET", "example.com", "/arena/%2e%2e/%2e%2e/outside.txt"},
		{"GET", "example.com", "/arena/lib//app.js"},
		{"GET", "example.com", "/arena/lib/./app.js"},
		{"GET", "example.com", "/arena/lib%5capp.js"},
		{"GET", "example.com", "/arena/leak.txt"},
		{"GET", "example.com", "/arena/leakdir/outside.txt"},
		{"GET", "example.com", "/arena/otherdir/index.html"},
		{"GET", "example.com", "/arena/relleak"},
		{"GET", "example.com", "/arena/config-link.json"},
		{"GET", "example.com", "/arena/server-link.js"},
		{"GET", "example.com", "/arena/code/move/run.js"},
		{"GET", "example.com", "/arena/libdir/app.js"},
		{"GET", "example.com", "/arena/libdir/"},
		{"GET", "example.com", "/broken/"}, // a game that did not load
		{"GET", "example.com", "/broken/index.html"},
		{"GET", "unknown.org", "/arena/"}, // an unknown domain
		{"GET", "127.0.0.1:8787", "/arena/"},
		{"POST", "example.com", "/arena/index.html"},
		{"PUT", "example.com", "/arena/index.html"},
		{"DELETE", "example.com", "/arena/index.html"},
	} {
		w := f.do(tc.method, tc.host, tc.target, nil)
		if w.Code != want.Code || w.Body.String() != want.Body.String() || !equalHeaders(w.Header(), want.Header()) {
			t.Errorf("%s %s%s: %d %v %q, want the uniform 404", tc.method, tc.host, tc.target, w.Code, w.Header(), w.Body)
		}
	}
	// The other game's page is served in its own right.
	if w := f.do("GET", "example.com", "/other/", nil); w.Code != 200 {
		t.Errorf("GET /other/: %d", w.Code)
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a.Get(k) != b.Get(k) {
			return false
		}
	}
	return true
}

func TestRedirectsAFolderToItsIndex(t *testing.T) {
	f := newFixture(t)
	w := f.do("GET", "example.com", "/arena/lib", nil)
	if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/arena/lib/" {
		t.Errorf("GET /arena/lib: %d %v", w.Code, w.Header())
	}
}

func TestRevalidationAndRanges(t *testing.T) {
	f := newFixture(t)
	body := "console.log(1)"
	etag := `"` + sum(body) + `"`
	first := f.do("GET", "example.com", "/arena/lib/app.js", nil)
	lastMod := first.Header().Get("Last-Modified")

	for _, tc := range []struct {
		name   string
		header http.Header
		code   int
		body   string
	}{
		{"matching ETag", http.Header{"If-None-Match": {etag}}, 304, ""},
		{"one of several ETags", http.Header{"If-None-Match": {`"abc", ` + etag}}, 304, ""},
		{"stale ETag", http.Header{"If-None-Match": {`"` + sum("old") + `"`}}, 200, body},
		{"not modified since", http.Header{"If-Modified-Since": {lastMod}}, 304, ""},
		{"modified since", http.Header{"If-Modified-Since": {"Mon, 02 Jan 2006 15:04:05 GMT"}}, 200, body},
		{"range", http.Header{"Range": {"bytes=8-"}}, 206, "log(1)"},
		{"range with If-Range", http.Header{"Range": {"bytes=0-6"}, "If-Range": {etag}}, 206, "console"},
		{"range with a stale If-Range", http.Header{"Range": {"bytes=0-6"}, "If-Range": {`"x"`}}, 200, body},
		{"unsatisfiable range", http.Header{"Range": {"bytes=99-"}}, 416, ""},
	} {
		w := f.do("GET", "example.com", "/arena/lib/app.js", tc.header)
		got := w.Body.String()
		if tc.code == 416 {
			got = ""
		}
		if w.Code != tc.code || got != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, w.Code, w.Body, tc.code, tc.body)
		}
		if tc.code == 304 && (w.Header().Get("ETag") != etag || w.Header().Get("Cache-Control") != "no-cache") {
			t.Errorf("%s: a 304 without its ETag or Cache-Control: %v", tc.name, w.Header())
		}
		if tc.code == 206 && !strings.HasPrefix(w.Header().Get("Content-Range"), "bytes ") {
			t.Errorf("%s: no Content-Range: %v", tc.name, w.Header())
		}
	}

	// A new version has a new ETag, and the old one no longer matches.
	f.write(t, "example.com/arena/lib/app.js", "console.log(2)")
	w := f.do("GET", "example.com", "/arena/lib/app.js", http.Header{"If-None-Match": {etag}})
	if w.Code != 200 || w.Body.String() != "console.log(2)" || w.Header().Get("ETag") != `"`+sum("console.log(2)")+`"` {
		t.Errorf("after a sync: %d %q %v", w.Code, w.Body, w.Header())
	}
}

// A file put there by hand (not through the store) is hashed once, then
// served from the cache; changing it changes the ETag.
func TestETagOfAFileTheStoreDidNotWrite(t *testing.T) {
	f := newFixture(t)
	p := filepath.Join(f.dir, "games", "example.com", "arena", "manual.txt")
	os.WriteFile(p, []byte("by hand"), 0o644)
	for i := 0; i < 2; i++ {
		if w := f.do("GET", "example.com", "/arena/manual.txt", nil); w.Header().Get("ETag") != `"`+sum("by hand")+`"` {
			t.Fatalf("round %d: ETag %q", i, w.Header().Get("ETag"))
		}
	}
	os.WriteFile(p, []byte("edited by hand"), 0o644)
	if w := f.do("GET", "example.com", "/arena/manual.txt", nil); w.Body.String() != "edited by hand" || w.Header().Get("ETag") != `"`+sum("edited by hand")+`"` {
		t.Fatalf("after an edit: %q %q", w.Body, w.Header().Get("ETag"))
	}
}

// A sync that deletes the game and pushes it again makes a new folder; the
// handle on the old one is not used for it.
func TestAGameFolderMadeAgain(t *testing.T) {
	f := newFixture(t)
	if w := f.do("GET", "example.com", "/arena/lib/app.js", nil); w.Code != 200 {
		t.Fatal(w.Code)
	}
	if err := f.st.Delete("example.com/arena"); err != nil {
		t.Fatal(err)
	}
	f.write(t, "example.com/arena/lib/app.js", "version two")
	if w := f.do("GET", "example.com", "/arena/lib/app.js", nil); w.Code != 200 || w.Body.String() != "version two" {
		t.Fatalf("after the folder was made again: %d %q", w.Code, w.Body)
	}
}

// While a sync replaces a file over and over, every reader gets one whole
// version, whose hash is the ETag it came with.
func TestReplacementUnderConcurrentReads(t *testing.T) {
	f := newFixture(t)
	versions := []string{strings.Repeat("a", 300<<10), strings.Repeat("b", 200<<10) + "end"}
	f.write(t, "example.com/arena/big.js", versions[0])
	srv := httptest.NewServer(f.h)
	defer srv.Close()

	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f.write(t, "example.com/arena/big.js", versions[i%2])
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				req, _ := http.NewRequest("GET", srv.URL+"/arena/big.js", nil)
				req.Host = "example.com"
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					errs <- resp.Status
					return
				}
				if !bytes.Equal(b, []byte(versions[0])) && !bytes.Equal(b, []byte(versions[1])) {
					errs <- "a mixed body"
					return
				}
				if resp.Header.Get("ETag") != `"`+sum(string(b))+`"` {
					errs <- "an ETag of another version"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-writerDone
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestContentTypes(t *testing.T) {
	for file, want := range map[string]string{
		"a.html": "text/html; charset=utf-8", "a.js": "text/javascript; charset=utf-8",
		"a.mjs": "text/javascript; charset=utf-8", "a.css": "text/css; charset=utf-8",
		"a.json": "application/json", "a.wasm": "application/wasm", "a.png": "image/png",
		"a.jpg": "image/jpeg", "a.JPEG": "image/jpeg", "a.webp": "image/webp", "a.svg": "image/svg+xml",
		"a.ogg": "audio/ogg", "a.mp3": "audio/mpeg", "a.wav": "audio/wav", "a.woff2": "font/woff2",
		"a": "application/octet-stream", "a.exe": "application/octet-stream",
	} {
		if got := ContentType(file); got != want {
			t.Errorf("ContentType(%q) = %q, want %q", file, got, want)
		}
	}
}
