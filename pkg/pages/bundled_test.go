package pages

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// The files that went into hoster.server.js are the server's: never served,
// whatever their spelling, unless hoster-game.json's public setting names
// them; TypeScript project and declaration files neither. The page and its
// assets still are.
func TestServerCodeIsNotServed(t *testing.T) {
	f := newFixture(t)
	want := uniform404()
	for _, target := range []string{
		"/arena/lib/rounds.ts", "/arena/LIB/Rounds.TS", "/arena/lib/./rounds.ts",
		"/arena/tsconfig.json", "/arena/types/game.d.ts", "/arena/hoster.client.d.ts",
	} {
		for _, method := range []string{"GET", "HEAD"} {
			w := f.do(method, "example.com", target, nil)
			if w.Code != want.Code || w.Body.String() != want.Body.String() && method == "GET" || !equalHeaders(w.Header(), want.Header()) {
				t.Errorf("%s %s: %d %v %q, want the uniform 404", method, target, w.Code, w.Header(), w.Body)
			}
		}
	}
	for target, body := range map[string]string{
		"/arena/":                  "<!doctype html><title>arena</title>",
		"/arena/lib/shared.js":     "export const shared = 1;", // bundled, and made public
		"/arena/lib/app.js":        "console.log(1)",           // the page's own
		"/arena/assets/sprite.png": "\x89PNG....",
	} {
		if w := f.do("GET", "example.com", target, nil); w.Code != 200 || w.Body.String() != body {
			t.Errorf("GET %s: %d %q, want 200 %q", target, w.Code, w.Body, body)
		}
	}
}

// What is private follows the pushed module, read again after each reload
// (Forget), not on every request.
func TestThePrivateFilesFollowEachLoad(t *testing.T) {
	f := newFixture(t)
	get := func(target string) int { return f.do("GET", "example.com", target, nil).Code }
	if get("/arena/lib/app.js") != 200 || get("/arena/lib/rounds.ts") != 404 {
		t.Fatal("the fixture's first load")
	}
	// A new module now bundles lib/app.js, and no longer lib/rounds.ts.
	f.write(t, "example.com/arena/hoster.server.js.map", `{"version":3,"sources":["lib/app.js"]}`)
	if get("/arena/lib/app.js") != 200 {
		t.Error("read again before the reload: the map is read once per load")
	}
	f.files.Forget("example.com", "arena")
	if get("/arena/lib/app.js") != 404 || get("/arena/lib/rounds.ts") != 200 {
		t.Error("after the reload, the new map decides")
	}

	// Without a map (a module pushed by an older client): the comments
	// esbuild writes before each bundled module name the files.
	os.Remove(filepath.Join(f.dir, "games", "example.com", "arena", "hoster.server.js.map"))
	f.write(t, "example.com/arena/hoster.server.js", "(() => {\n  // lib/rounds.ts\n  var rounds = 3;\n  // lib/shared.js\n  var shared = 1;\n})();\n")
	f.files.Forget("example.com", "arena")
	if get("/arena/lib/rounds.ts") != 404 || get("/arena/lib/app.js") != 200 || get("/arena/lib/shared.js") != 200 {
		t.Error("without a map, the module's comments decide")
	}

	// A hoster-game.json that does not parse makes nothing public.
	f.write(t, "example.com/arena/hoster-game.json", `{"tickRate": 20,}`)
	f.files.Forget("example.com", "arena")
	if get("/arena/lib/shared.js") != 404 {
		t.Error("a broken hoster-game.json must not make server code public")
	}
}

// A folder whose index went into the module is not redirected to either.
func TestNoRedirectToAPrivateIndex(t *testing.T) {
	f := newFixture(t)
	f.write(t, "example.com/arena/hoster.server.js.map", `{"version":3,"sources":["lib/index.html"]}`)
	f.files.Forget("example.com", "arena")
	if w := f.do("GET", "example.com", "/arena/lib", nil); w.Code != 404 {
		t.Errorf("GET /arena/lib: %d %v", w.Code, w.Header())
	}
}

// Browsers ask every domain for /favicon.ico: it answers 204, quietly and
// cacheably, whether or not the domain has games.
func TestFaviconAnswersNoContent(t *testing.T) {
	f := newFixture(t)
	for _, host := range []string{"example.com", "unknown.org", "127.0.0.1:8787"} {
		for _, method := range []string{"GET", "HEAD"} {
			w := f.do(method, host, "/favicon.ico", nil)
			if w.Code != http.StatusNoContent || w.Body.Len() != 0 || w.Header().Get("Cache-Control") != "public, max-age=86400" {
				t.Errorf("%s %s/favicon.ico: %d %v %q", method, host, w.Code, w.Header(), w.Body)
			}
		}
	}
	if w := f.do("POST", "example.com", "/favicon.ico", nil); w.Code == http.StatusNoContent {
		t.Error("POST /favicon.ico answered as the icon")
	}
	// A game's own favicon is its file.
	f.write(t, "example.com/arena/favicon.ico", "icon")
	if w := f.do("GET", "example.com", "/arena/favicon.ico", nil); w.Code != 200 || w.Body.String() != "icon" {
		t.Errorf("GET /arena/favicon.ico: %d %q", w.Code, w.Body)
	}
}
