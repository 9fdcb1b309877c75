package dev

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// The playground answers loopback hosts only, at / and under
// /_playground/api/, from what the runtime knows; everything else goes on
// to the games.
func TestPlaygroundAPI(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("../../examples/sites")); err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Options{GamesRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	games := httptest.NewServer(rt)
	t.Cleanup(func() { rt.Shutdown(t.Context()); games.Close() })
	passed := 0
	h := Playground(rt, 8080, slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		passed++
		http.NotFound(w, r)
	}))
	get := func(host, path string) (int, string) {
		t.Helper()
		r := httptest.NewRequest("GET", path, nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Body)
		return w.Code, string(b)
	}

	for _, host := range []string{"localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST"} {
		if code, body := get(host, "/"); code != 200 || !strings.Contains(body, "hoster dev playground") {
			t.Fatalf("GET / on %s: %d", host, code)
		}
	}
	// A game's domain, a name rebound to 127.0.0.1, another path: not the
	// playground's.
	for _, c := range [][2]string{{"example.com.localhost:8080", "/"}, {"evil.example:8080", "/"},
		{"evil.example", "/_playground/api/games"}, {"localhost:8080", "/arena/"}} {
		before := passed
		if get(c[0], c[1]); passed != before+1 {
			t.Fatalf("GET %s on %s was not passed on", c[1], c[0])
		}
	}

	// A player joins; the list shows its instance, the inspector its state.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(games.URL, "http")+"/arena?name=ada",
		http.Header{"Host": {"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var welcome struct{ Player, Instance string }
	if err := ws.ReadJSON(&welcome); err != nil {
		t.Fatal(err)
	}
	var list struct{ Games []gameEntry }
	if code, body := get("localhost:8080", "/_playground/api/games"); code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("games: %d %s", code, body)
	}
	if len(list.Games) != 1 || list.Games[0].URL != "http://example.com.localhost:8080/arena/" || len(list.Games[0].Instances) != 1 {
		t.Fatalf("games %+v", list.Games)
	}
	in := list.Games[0].Instances[0]
	if in.ID != welcome.Instance || len(in.Players) != 1 || in.Players[0].ID != welcome.Player ||
		!slices.Equal(in.StateFields, []string{"collected", "round"}) {
		t.Fatalf("instance %+v", in)
	}
	code, body := get("localhost:8080", "/_playground/api/inspect?game=example.com/arena&instance="+in.ID+"&player="+welcome.Player)
	var res runtime.Inspection
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil || !strings.Contains(string(res.State), `"round":1`) ||
		!strings.Contains(string(res.View), `"things"`) {
		t.Fatalf("inspect: %d %s", code, body)
	}
	if code, body := get("localhost:8080", "/_playground/api/inspect?game=example.com/arena&instance=nope"); code != 404 ||
		!strings.Contains(body, "no such instance") {
		t.Fatalf("inspect of no instance: %d %s", code, body)
	}
}
