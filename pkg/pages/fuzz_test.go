package pages

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Whatever the path, the pages answer with a public file of the game, a
// redirect, or the uniform 404: never the game's machinery, never a file
// of another game or from outside.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		"", "index.html", "lib/app.js", "lib/", "lib", "hoster-game.json", "hoster.server.js",
		"hoster.server.js.map", "hoster-commands/move/run.js", "_tests/a.test.js", ".hidden",
		"../broken/index.html", "%2e%2e/broken/index.html", "lib//app.js", "lib/./app.js",
		"lib\\app.js", "assets/../hoster-game.json", "..", "lib/%00", "/etc/passwd",
		"lib/rounds.ts", "LIB/Rounds.TS", "lib/shared.js", "tsconfig.json", "types/game.d.ts", "hoster.client.d.ts",
		"hoster.client.js",
	} {
		f.Add(seed)
	}
	fx := newFixture(f)
	public := map[string]bool{}
	for _, b := range []string{"<!doctype html><title>arena</title>", "lib index", "console.log(1)",
		"\x89PNG....", "OggS", "?", "export const shared = 1;", "var Hoster;"} {
		public[b] = true
	}
	f.Fuzz(func(t *testing.T, p string) {
		u := &url.URL{Path: "/arena/" + p}
		r := httptest.NewRequest("GET", "/", nil)
		r.URL = u
		r.Host = "example.com"
		w := httptest.NewRecorder()
		fx.h.ServeHTTP(w, r)
		switch w.Code {
		case http.StatusOK:
			if !public[w.Body.String()] {
				t.Fatalf("GET %q served %q", u.Path, w.Body.String())
			}
		case http.StatusMovedPermanently:
			if !strings.HasPrefix(w.Header().Get("Location"), "/arena/") {
				t.Fatalf("GET %q redirected to %q", u.Path, w.Header().Get("Location"))
			}
		case http.StatusNotFound:
			if w.Body.String() != uniform404().Body.String() {
				t.Fatalf("GET %q: a 404 of another form %q", u.Path, w.Body)
			}
		default:
			t.Fatalf("GET %q: %d", u.Path, w.Code)
		}
	})
}
