package servercmd

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/socktest"
	"github.com/hoster-dev/hoster/pkg/api"
)

// What serve does with its games in worker processes (its default; the
// test program is the worker, see TestMain), as it does with them in its
// own process.

// exampleGames copies the example arena to each domain under a new hosting
// root, with its origins opened to the test's.
func exampleGames(t *testing.T, domains ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range domains {
		arena := filepath.Join(root, api.GamesDir, d, "arena")
		if err := os.CopyFS(arena, os.DirFS("../../examples/sites/example.com/arena")); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// testPlayer is a socket of the arena with what the test read of it.
type testPlayer struct {
	ws      *websocket.Conn
	welcome struct{ T, Player, Resume string }
}

// dialArena opens a socket of domain's arena for the client at addr (as a
// loopback proxy names it) and reads its first frame.
func dialArena(t *testing.T, listen, domain, addr, query string) (*testPlayer, error) {
	t.Helper()
	h := http.Header{"Host": {domain}, "Origin": {"https://example.com"}, "X-Forwarded-For": {addr}}
	ws, resp, err := websocket.DefaultDialer.Dial("ws://"+listen+"/arena"+query, h)
	if err != nil {
		if resp != nil {
			return nil, errors.New(resp.Status)
		}
		return nil, err
	}
	t.Cleanup(func() { ws.Close() })
	ws.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard
	p := &testPlayer{ws: ws}
	if err := ws.ReadJSON(&p.welcome); err != nil {
		return nil, err
	}
	if p.welcome.T != "welcome" {
		_, _, err := ws.ReadMessage()
		return nil, err
	}
	return p, nil
}

// closeCode reads until the socket's close and returns its code and text.
func (p *testPlayer) closeCode(t *testing.T) (int, string) {
	t.Helper()
	for {
		if _, _, err := p.ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Text
			}
			return 0, err.Error()
		}
	}
}

// A stop gives every game's players the going-away close (1001), from
// their workers, which end as asked: the log has no worker's end that was
// not asked for.
func TestProcessStopGoesAway(t *testing.T) {
	root := exampleGames(t, "example.com", "b.example")
	o := serveOptions{HostingRoot: root, LogsRoot: t.TempDir()}
	listen, _, logs, stop := startServeStoppable(t, o)
	a, err := dialArena(t, listen, "example.com", "198.51.100.1", "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := dialArena(t, listen, "b.example", "198.51.100.2", "")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for _, p := range []*testPlayer{a, b} {
		if code, text := p.closeCode(t); code != 1001 || text != "the server is shutting down" {
			t.Errorf("a player at the stop got %d %q, want 1001, the server is shutting down", code, text)
		}
	}
	if strings.Contains(logs.String(), "game worker ended:") {
		t.Errorf("a stop is logged as a worker's failure:\n%s", logs.String())
	}
}

// A player whose connection is lost resumes its seat, on the same worker,
// within the game's resumeGrace.
func TestProcessResumeKeepsTheSeat(t *testing.T) {
	listen, _, _ := startServe(t, serveOptions{HostingRoot: exampleGames(t, "example.com"), LogsRoot: t.TempDir()})
	p, err := dialArena(t, listen, "example.com", "198.51.100.1", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.welcome.Resume == "" {
		t.Fatal("the welcome has no resume token")
	}
	p.ws.NetConn().Close() // lost: no close frame
	again, err := dialArena(t, listen, "example.com", "198.51.100.1", "?resume="+p.welcome.Resume)
	if err != nil {
		t.Fatal(err)
	}
	if again.welcome.Player != p.welcome.Player {
		t.Fatalf("resumed as %q, want the seat of %q", again.welcome.Player, p.welcome.Player)
	}
}

// A sync while a player is connected reloads the game in its worker: the
// player stays, and its next move runs the new code.
func TestProcessReloadKeepsPlayers(t *testing.T) {
	root := exampleGames(t, "example.com")
	tok := strings.Repeat("ab", 32)
	os.WriteFile(filepath.Join(root, api.TokenFile), []byte(tok), 0o600)
	listen, _, _ := startServe(t, serveOptions{HostingRoot: root, LogsRoot: t.TempDir()})
	p, err := dialArena(t, listen, "example.com", "198.51.100.1", "?name=before")
	if err != nil {
		t.Fatal(err)
	}
	names := socktest.Names(p.ws, p.welcome.Player)
	// The generated bundle is what runs: a sync pushes one whose move
	// renames the player.
	bundle, _ := os.ReadFile(filepath.Join(root, api.GamesDir, "example.com", "arena", "hoster.server.js"))
	edited := strings.Replace(string(bundle), "player.vx = args.dx;", `player.name = "after"; player.vx = args.dx;`, 1)
	if edited == string(bundle) {
		t.Fatal("the test cannot find the move's code in the bundle")
	}
	req, _ := http.NewRequest("PUT", "http://"+listen+api.PathFile+"?path=example.com/arena/hoster.server.js", strings.NewReader(edited))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("syncing the edited bundle: %v %v", resp, err)
	}
	resp.Body.Close()
	p.ws.SetReadDeadline(time.Time{})
	socktest.MoveUntilNamed(t, p.ws, names, "after", 50*time.Millisecond)
}
