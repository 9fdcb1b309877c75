package servercmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/httptestutil"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/hoster-dev/hoster/pkg/pages"
)

// serve answers the game's page, its assets and its library on the game's
// domain, beside the socket, and a page pushed by a sync is served at once
// with the hash of its upload as its ETag.
func TestServeServesTheGamesPages(t *testing.T) {
	root := t.TempDir()
	tok := strings.Repeat("ab", 32)
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte(tok), 0o600)
	arena := filepath.Join(root, api.GamesDir, "example.com", "arena")
	if err := os.CopyFS(arena, os.DirFS("../../examples/sites/example.com/arena")); err != nil {
		t.Fatal(err)
	}
	listen, _, _ := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})

	get := func(path string) (*http.Response, string) {
		t.Helper()
		return getPage(t, listen, "example.com", path)
	}
	page, _ := os.ReadFile(filepath.Join(arena, "index.html"))
	if resp, body := get("/arena/"); resp.StatusCode != 200 || body != string(page) || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /arena/: %s %v", resp.Status, resp.Header)
	}
	if resp, _ := get("/arena"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/arena/" {
		t.Fatalf("GET /arena: %s %v", resp.Status, resp.Header)
	}
	if resp, _ := get("/arena/hoster.client.js"); resp.StatusCode != 200 {
		t.Fatalf("the library: %s", resp.Status)
	}
	for _, p := range []string{"/arena/hoster.server.js", "/arena/hoster-game.json", "/arena/hoster-commands/move/run.js"} {
		if resp, body := get(p); resp.StatusCode != 404 || body != "404 page not found\n" {
			t.Errorf("GET %s: %s %q", p, resp.Status, body)
		}
	}

	// A sync pushes a new page: it is served whole, with its upload's hash.
	next := "<!doctype html><title>new</title>"
	req, _ := http.NewRequest("PUT", "http://"+listen+api.PathFile+"?path=example.com/arena/index.html", strings.NewReader(next))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT: %v %v", err, resp)
	}
	resp.Body.Close()
	sum := sha256.Sum256([]byte(next))
	// At once: the answer to the PUT means the page is in place.
	if resp, body := get("/arena/"); body != next || resp.Header.Get("ETag") != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("the pushed page is not served: %q %v", body, resp.Header)
	}
}

// hoster-server never serves hoster dev's playground (pkg/dev): its page
// and its JSON answer 404 on every host, a game's domain included.
func TestServeHasNoPlayground(t *testing.T) {
	root := t.TempDir()
	arena := filepath.Join(root, api.GamesDir, "example.com", "arena")
	if err := os.CopyFS(arena, os.DirFS("../../examples/sites/example.com/arena")); err != nil {
		t.Fatal(err)
	}
	listen, _, _ := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})
	for _, host := range []string{"localhost", "127.0.0.1", listen, "example.com"} {
		for _, path := range []string{"/", "/_playground/api/games", "/_playground/api/inspect?game=example.com/arena&instance=x"} {
			resp, b := getPage(t, listen, host, path)
			if resp.StatusCode != 404 || strings.Contains(string(b), "playground") {
				t.Errorf("GET %s on %s: %s %q", path, host, resp.Status, b)
			}
		}
	}
}

// A game whose hook imports lib/rounds.ts, generated and pushed by the real
// client to the real server: what went into hoster.server.js is never
// served, nor are tsconfig.json and .d.ts files, each a 404 like any other;
// the page, an asset and the file hoster-game.json's "public" names are.
func TestServeKeepsServerCodePrivate(t *testing.T) {
	root := t.TempDir()
	tok := strings.Repeat("cd", 32)
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte(tok), 0o600)
	listen, _, logs := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})

	sites := filepath.Join(t.TempDir(), "sites")
	if err := os.CopyFS(sites, os.DirFS("../../test/testdata/private-files")); err != nil {
		t.Fatal(err)
	}
	res, err := gen.Generate(sites)
	if err != nil || res.Failed() {
		t.Fatalf("gen: %v %v", err, res.Problems())
	}
	client, err := apiclient.NewClient(apiclient.ClientConfig{Server: "http://" + listen, Token: tok, Attempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := mirror.Sync(context.Background(), sites, client, mirror.SyncOptions{}, nil)
	if err != nil || len(sum.Failures) > 0 {
		t.Fatalf("sync: %v %+v", err, sum.Failures)
	}
	if !logs.WaitFor("game loaded", 1, 20*time.Second) {
		t.Fatalf("the game did not load:\n%s", logs.String())
	}
	vault := filepath.Join(sites, "example.com", "vault")
	for _, file := range []string{"lib/rounds.ts", "tsconfig.json", "types/extra.d.ts", "hoster.client.d.ts", "hoster.server.js.map"} {
		if _, err := os.Stat(filepath.Join(root, api.GamesDir, "example.com", "vault", filepath.FromSlash(file))); err != nil {
			t.Errorf("%s was not pushed: sync takes the whole folder: %v", file, err)
		}
		if resp, body := getPage(t, listen, "example.com", "/vault/"+file); resp.StatusCode != 404 || body != "404 page not found\n" {
			t.Errorf("GET /vault/%s: %s %q, want the uniform 404", file, resp.Status, body)
		}
	}
	for _, file := range []string{"index.html", "assets/sprite.png", "lib/shared.js"} {
		want, _ := os.ReadFile(filepath.Join(vault, filepath.FromSlash(file)))
		if resp, body := getPage(t, listen, "example.com", "/vault/"+file); resp.StatusCode != 200 || body != string(want) {
			t.Errorf("GET /vault/%s: %s %q", file, resp.Status, body)
		}
	}
	if resp, _ := getPage(t, listen, "example.com", "/favicon.ico"); resp.StatusCode != http.StatusNoContent {
		t.Errorf("GET /favicon.ico: %s", resp.Status)
	}
}

// getPage GETs path on listen for host, and reads the whole answer.
func getPage(t *testing.T, listen, host, path string) (*http.Response, string) {
	t.Helper()
	return httptestutil.Get(t, "http://"+listen+path, host, nil)
}

// Every public file of a game, the browser library included, comes by one
// path with one set of headers: its type, nosniff, no-cache, its sha256 as
// its ETag, Last-Modified and Accept-Ranges; each revalidates with a 304 and
// answers a Range with a 206.
func TestServeGivesEveryPublicFileTheSameHeaders(t *testing.T) {
	root := t.TempDir()
	arena := filepath.Join(root, api.GamesDir, "example.com", "arena")
	if err := os.CopyFS(arena, os.DirFS("../../examples/sites/example.com/arena")); err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{
		"style.css": "body{}", "scripts/ui.js": "ui()", "assets/sprite.png": "\x89PNG....", "assets/song.ogg": "OggS",
		"data/level.json": "{}", "fonts/a.woff2": "wOF2", "notes.unknownext": "?",
	}
	for name, body := range extra {
		p := filepath.Join(arena, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listen, _, _ := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})
	var keys string
	for _, file := range []string{"index.html", api.ClientLibrary, "scripts/ui.js", "style.css",
		"assets/sprite.png", "assets/song.ogg", "data/level.json", "fonts/a.woff2", "notes.unknownext"} {
		want, err := os.ReadFile(filepath.Join(arena, filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(want)
		resp, body := getPage(t, listen, "example.com", "/arena/"+file)
		h := resp.Header
		if resp.StatusCode != 200 || body != string(want) {
			t.Errorf("GET /arena/%s: %s", file, resp.Status)
			continue
		}
		if h.Get("Content-Type") != pages.ContentType(file) || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Cache-Control") != "no-cache" || h.Get("ETag") != `"`+hex.EncodeToString(sum[:])+`"` ||
			h.Get("Last-Modified") == "" || h.Get("Accept-Ranges") != "bytes" {
			t.Errorf("GET /arena/%s: headers %v", file, h)
		}
		// The same names, whatever the file.
		var names []string
		for k := range h {
			if k != "Date" {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		if keys == "" {
			keys = strings.Join(names, " ")
		} else if got := strings.Join(names, " "); got != keys {
			t.Errorf("GET /arena/%s: headers %s, the others %s", file, got, keys)
		}
		for _, c := range []struct {
			header, value string
			status        int
		}{{"If-None-Match", h.Get("ETag"), http.StatusNotModified}, {"Range", "bytes=0-", http.StatusPartialContent}} {
			req, _ := http.NewRequest("GET", "http://"+listen+"/arena/"+file, nil)
			req.Host = "example.com"
			req.Header.Set(c.header, c.value)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("GET /arena/%s with %s: %s, want %d", file, c.header, resp.Status, c.status)
			}
		}
	}
}
