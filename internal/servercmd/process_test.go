package servercmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/socktest"
	"github.com/hoster-dev/hoster/internal/waitbuf"
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
// not asked for, and each instance's last stats line is in its game's
// game-log tree.
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
	for _, domain := range []string{"example.com", "b.example"} {
		files, _ := filepath.Glob(filepath.Join(o.LogsRoot, api.GameLogsDir, domain, "arena", api.ProcessesDir, "*", "stats-*.jsonl"))
		var last api.GameStatsLine
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				json.Unmarshal([]byte(l), &last)
			}
		}
		if !last.Ended || last.Arrivals != 1 {
			t.Errorf("%s's stats files %v end with %+v, want its instance's last line, with its one arrival", domain, files, last)
		}
	}
}

// A game's worker collects garbage as serve does (GOGC gcPercent, not Go's
// default): at 100 the 1,000-player bench spent about three times the
// collector's share of CPU in the worker it spent in serve's own process.
func TestProcessWorkerCollectsAsServe(t *testing.T) {
	if _, _, set := gcSettings(os.Getenv, 0); !set {
		t.Skip("GOGC or GOMEMLIMIT is set here: the worker keeps the operator's")
	}
	listen, _, logs := startServe(t, serveOptions{HostingRoot: exampleGames(t, "example.com"), LogsRoot: t.TempDir()})
	if _, err := dialArena(t, listen, "example.com", "198.51.100.1", ""); err != nil {
		t.Fatal(err)
	}
	if !logs.WaitFor(`msg="game worker limits"`, 1, 30*time.Second) { // a hang guard
		t.Fatalf("the worker never said its limits:\n%s", logs.String())
	}
	m := regexp.MustCompile(`msg="game worker limits".* gogc=(\S+)`).FindStringSubmatch(logs.String())
	if want := fmt.Sprint(gcPercent); m == nil || m[1] != want {
		t.Fatalf("the worker's limits do not say gogc=%s:\n%s", want, logs.String())
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

// The sockets of one address are counted by the server, whichever game's
// worker they go to: with a bound of one, a second socket to another game
// is refused (1013), and once the first socket is closed, the address may
// open another.
func TestProcessSocketsPerAddressServerWide(t *testing.T) {
	listen, _, logs := startServe(t, serveOptions{HostingRoot: exampleGames(t, "example.com", "b.example"), LogsRoot: t.TempDir(),
		SocketsPerAddress: 1})
	first, err := dialArena(t, listen, "example.com", "198.51.100.1", "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := dialArena(t, listen, "b.example", "198.51.100.1", "")
	var ce *websocket.CloseError
	if p != nil || !errors.As(err, &ce) || ce.Code != 1013 || !strings.Contains(ce.Text, "too many connections") {
		t.Fatalf("a second socket of one address, to another game: %v, want 1013 for too many connections", err)
	}
	// The line follows the close frame: waited for, a hang guard.
	if !logs.WaitFor(`msg="socket refused: too many sockets from one address" game=b.example/arena address=198.51.100.1 limit=1`, 1, 30*time.Second) {
		t.Fatalf("the refusal is not logged by the server:\n%s", logs.String())
	}
	// The first socket's end frees the address's place: the server counts
	// it until the game's worker is done with it.
	first.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "bye"))
	first.closeCode(t)
	for {
		p, err := dialArena(t, listen, "b.example", "198.51.100.1", "")
		if err == nil {
			p.ws.Close()
			break
		}
		if !errors.As(err, &ce) || ce.Code != 1013 {
			t.Fatalf("a socket after the first ended: %v", err)
		}
	}
}

// The parent hands a socket over and keeps nothing running for it: no
// goroutine of serve's waits for each of a worker's sockets (they were
// memory for nothing, 1,000 of them at 1,000 players), while the socket
// still counts for its address until its end (the test above).
func TestProcessHandOffKeepsNoGoroutine(t *testing.T) {
	listen, _, _ := startServe(t, serveOptions{HostingRoot: exampleGames(t, "example.com"), LogsRoot: t.TempDir(), AccessLog: true})
	if _, err := dialArena(t, listen, "example.com", "198.51.100.1", ""); err != nil { // the worker starts
		t.Fatal(err)
	}
	before := goruntime.NumGoroutine()
	const n = 40
	for i := range n {
		if _, err := dialArena(t, listen, "example.com", fmt.Sprintf("198.51.100.%d", 2+i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if grew := goruntime.NumGoroutine() - before; grew >= n/2 {
		t.Fatalf("serve has %d more goroutines with %d more handed sockets open, want fewer than %d", grew, n, n/2)
	}
}

// The access log has one line per game socket, written when the socket
// ends, as with the games in serve's own process: 101 for a played socket,
// lasting at least as long as the player held it, and the status of a
// socket refused before the upgrade (a stranger's origin: 403).
func TestProcessAccessLogOfSockets(t *testing.T) {
	logsRoot := t.TempDir()
	listen, _, _, stop := startServeStoppable(t, serveOptions{HostingRoot: exampleGames(t, "example.com"), LogsRoot: logsRoot, AccessLog: true})
	h := http.Header{"Host": {"example.com"}, "Origin": {"https://stranger.example"}}
	if _, resp, err := websocket.DefaultDialer.Dial("ws://"+listen+"/arena?who=stranger", h); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("a stranger's origin: %v %v, want 403", resp, err)
	}
	p, err := dialArena(t, listen, "example.com", "198.51.100.1", "?who=player")
	if err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	p.ws.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 1, "dy": 0}})
	for moved := false; !moved; { // the player holds its socket until its move is seen
		var m struct{ Change []struct{ ID string } }
		if err := p.ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Change {
			moved = moved || c.ID == p.welcome.Player
		}
	}
	p.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "bye"))
	held := time.Since(opened)
	p.closeCode(t)
	stop() // every line is written once serve has returned
	b, err := os.ReadFile(filepath.Join(logsRoot, "web-logs", "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]struct {
		Status   int
		Duration float64
	}{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var line struct {
			Status   int
			Duration float64
			Request  struct{ URI string }
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("an access line does not parse: %v: %s", err, l)
		}
		got[line.Request.URI] = struct {
			Status   int
			Duration float64
		}{line.Status, line.Duration}
	}
	if s := got["/arena?who=stranger"]; s.Status != 403 {
		t.Errorf("the refused socket's line: %+v, want 403\n%s", s, b)
	}
	if s := got["/arena?who=player"]; s.Status != 101 || s.Duration < held.Seconds() {
		t.Errorf("the played socket's line: %+v, want 101 lasting at least the %v the player held it\n%s", s, held, b)
	}
}

// Process isolation, serve's default, needs Linux: elsewhere the games run
// in serve's process, and the log says why.
func TestIsolationOffLinuxFallsBack(t *testing.T) {
	logs := waitbuf.New()
	log := slog.New(slog.NewTextHandler(logs, nil))
	if got := isolationOn("darwin", "process", log); got != "none" || !strings.Contains(logs.String(), "needs Linux") {
		t.Fatalf("process isolation on darwin: %q, log %q; want none, saying it needs Linux", got, logs.String())
	}
	for _, want := range []string{"process", "none"} {
		if got := isolationOn("linux", want, log); got != want {
			t.Errorf("--isolation %s on linux: %q", want, got)
		}
	}
	if got := isolationOn("darwin", "none", log); got != "none" {
		t.Errorf("--isolation none on darwin: %q", got)
	}
}
