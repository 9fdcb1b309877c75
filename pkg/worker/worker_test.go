package worker_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/deploy"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// server is the hoster-server program, built once for these tests: its
// game workers are real processes of it.
var server string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "hoster-worker-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		server = filepath.Join(dir, "hoster-server")
		if out, err := exec.Command("go", "build", "-o", server, "github.com/hoster-dev/hoster/cmd/hoster-server").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building hoster-server: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}())
}

// hang is a hang guard, never a timing threshold.
const hang = 60 * time.Second

// counter is a small game: a player's "n" goes up on each "inc", "grow"
// makes its instance keep 8 MB more each tick, "spin" runs a regexp whose
// backtracking ignores the interrupt.
func counter(extra string) map[string]string {
	return map[string]string{
		"hoster-game.json":              `{"tickRate": 20, "sendRate": 10, "capacity": 16, "origins": ["*"], "emptyGrace": 0` + extra + `}`,
		"hoster-player/fields.json":     `{"n": "integer"}`,
		"hoster-player/join.js":         `export default function (i, p) { p.n = 0; }`,
		"hoster-instance/tick.js":       `export default function (i) { if (i.state.grow) i.state.grow.push(new Array(1 << 20).fill(Math.random())); }`,
		"hoster-commands/inc/args.json": `{}`,
		"hoster-commands/inc/run.js":    `export default function (i, p) { p.n++; }`,
		"hoster-commands/grow/run.js":   `export default function (i) { i.state.grow = []; }`,
		"hoster-commands/spin/run.js":   `export default function () { /^(?=(a+)+$)\1/.test("a".repeat(40) + "b"); }`,
	}
}

type env struct {
	t        *testing.T
	addr     string
	logs     *waitbuf.Buffer
	root     string
	logsRoot string
	token    string
	cmd      *exec.Cmd
	tls      *tls.Config // the client's, when the server serves TLS itself
}

// start runs hoster-server serve --isolation process on the games
// ("domain/game" -> files) until the test ends.
func start(t *testing.T, games map[string]map[string]string, flags ...string) *env {
	t.Helper()
	e := newEnv(t, games)
	e.run(nil, flags...)
	return e
}

// newEnv makes a hosting root with the games, and runs no server.
func newEnv(t *testing.T, games map[string]map[string]string) *env {
	t.Helper()
	e := &env{t: t, root: t.TempDir(), logsRoot: t.TempDir(), token: strings.Repeat("ab", 32)}
	gamesRoot := filepath.Join(e.root, api.GamesDir)
	for key, files := range games {
		for rel, body := range files {
			p := filepath.Join(gamesRoot, key, rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if res, err := gen.Generate(gamesRoot); err != nil || res.Failed() {
		t.Fatalf("generating the test games: %v %v", err, res.Problems())
	}
	os.WriteFile(filepath.Join(e.root, api.TokenFile), []byte(e.token), 0o600)
	return e
}

// run starts a server on e's hosting root (until the test ends, or the
// next run), its command run by wrap (a program and its arguments, which
// runs the rest) if not nil, and waits for its games to load.
func (e *env) run(wrap []string, flags ...string) {
	t := e.t
	t.Helper()
	e.logs = waitbuf.New()
	args := append([]string{server, "serve", "--isolation", "process", "--hosting-root", e.root, "--logs-root", e.logsRoot,
		"--listen", "127.0.0.1:0", "--ask-listen", "127.0.0.1:0", "--reload-debounce", "50ms", "--stats-interval", "1h"}, flags...)
	args = append(append([]string{}, wrap...), args...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = e.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a service's
	e.cmd = cmd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := e.logs
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("the server's log:\n%s", logs.String())
		}
	})
	listen := regexp.MustCompile(`msg=serving listen=(\S+)`)
	if !e.logs.Until(func(s string) bool { return listen.MatchString(s) }, hang) {
		t.Fatalf("the server did not start:\n%s", e.logs.String())
	}
	e.addr = listen.FindStringSubmatch(e.logs.String())[1]
	// The server listens first and loads the games after.
	if !e.logs.Until(func(s string) bool { return strings.Contains(s, `msg="games loaded"`) }, hang) {
		t.Fatalf("the games did not load:\n%s", e.logs.String())
	}
}

// player is a socket of a game.
type player struct {
	ws  *websocket.Conn
	msg chan map[string]any
	end chan error // the read error that ended it
}

// join opens a socket to domain/game and waits for its welcome.
func (e *env) join(key, query string) *player {
	e.t.Helper()
	p, err := e.dial(key, query)
	if err != nil {
		e.t.Fatalf("joining %s: %v", key, err)
	}
	return p
}

func (e *env) dial(key, query string) (*player, error) {
	p, err := e.open(key, query)
	if err != nil {
		return nil, err
	}
	select {
	case m, ok := <-p.msg:
		switch {
		case !ok: // a socket handed to a worker as it ended gets 4004
			return nil, fmt.Errorf("the socket ended: %v", <-p.end)
		case m["t"] != "welcome":
			return nil, fmt.Errorf("first message %v, want a welcome", m)
		}
	case <-time.After(hang):
		return nil, errors.New("no welcome")
	}
	return p, nil
}

// open opens a socket to domain/game: it returns once the handshake is
// answered.
func (e *env) open(key, query string) (*player, error) {
	domain, game, _ := strings.Cut(key, "/")
	h := http.Header{"Host": {domain}}
	dialer, scheme := websocket.DefaultDialer, "ws://"
	if e.tls != nil {
		dialer, scheme = &websocket.Dialer{TLSClientConfig: e.tls, HandshakeTimeout: hang}, "wss://"
	}
	ws, resp, err := dialer.Dial(scheme+e.addr+"/"+game+query, h)
	if err != nil {
		if resp != nil {
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			return nil, fmt.Errorf("%s: %s", resp.Status, b.String())
		}
		return nil, err
	}
	e.t.Cleanup(func() { ws.Close() })
	p := &player{ws: ws, msg: make(chan map[string]any, 1024), end: make(chan error, 1)}
	go func() {
		for {
			var m map[string]any
			if err := ws.ReadJSON(&m); err != nil {
				p.end <- err
				close(p.msg)
				return
			}
			select {
			case p.msg <- m:
			default: // a test that reads no more
			}
		}
	}()
	return p, nil
}

// refusal opens a socket to domain/game that the server turns away, and
// returns its close code and reason (frames before the close are skipped).
func (e *env) refusal(key, query string) (int, string) {
	e.t.Helper()
	domain, game, _ := strings.Cut(key, "/")
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+e.addr+"/"+game+query, http.Header{"Host": {domain}})
	if err != nil {
		e.t.Fatalf("opening a socket to %s: %v", key, err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(hang))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Text
			}
			return 0, err.Error()
		}
	}
}

// next is the player's next message; it fails the test if the socket ended.
func (p *player) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-p.msg:
		if !ok {
			t.Fatalf("the socket ended: %v", <-p.end)
		}
		return m
	case <-time.After(hang):
		t.Fatal("no message")
	}
	return nil
}

// closed waits for the socket's end and returns its close code.
func (p *player) closed(t *testing.T) (int, string) {
	t.Helper()
	for {
		select {
		case _, ok := <-p.msg:
			if ok {
				continue
			}
			err := <-p.end
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Text
			}
			return 0, err.Error()
		case <-time.After(hang):
			t.Fatal("the socket did not close")
		}
	}
}

// play sends one inc and waits until an update shows the count at want.
func (p *player) play(t *testing.T, want float64) {
	t.Helper()
	if err := p.ws.WriteJSON(map[string]any{"c": "inc", "a": map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	for {
		m := p.next(t)
		for _, list := range []string{"appear", "change"} {
			xs, _ := m[list].([]any)
			for _, x := range xs {
				f, _ := x.(map[string]any)["f"].(map[string]any)
				if n, ok := f["n"].(float64); ok && n == want {
					return
				}
			}
		}
	}
}

// workerPid is the pid of the nth (1-based) worker started for key.
func (e *env) workerPid(key string, nth int) int {
	e.t.Helper()
	re := regexp.MustCompile(`msg="game worker started" game=` + regexp.QuoteMeta(key) + ` worker=(\d+)`)
	if !e.logs.Until(func(s string) bool { return len(re.FindAllString(s, -1)) >= nth }, hang) {
		e.t.Fatalf("no worker %d for %s", nth, key)
	}
	m := re.FindAllStringSubmatch(e.logs.String(), -1)
	pid, _ := strconv.Atoi(m[nth-1][1])
	return pid
}

func (e *env) waitLog(sub string, n int) {
	e.t.Helper()
	if !e.logs.WaitFor(sub, n, hang) {
		e.t.Fatalf("the log never said %q (%d times)", sub, n)
	}
}

// A player's socket reaches the game's worker whole: the worker, not the
// parent, runs the game, and the player plays.
func TestSocketHandedOver(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter("")})
	p := e.join("a.example/count", "")
	e.workerPid("a.example/count", 1)
	for n := 1.0; n <= 3; n++ {
		p.play(t, n)
	}
}

// kill -9 of a worker: its players get 4004, another game's players play
// on, and the next join starts a fresh worker.
func TestKilledWorker(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter(""), "b.example/count": counter("")})
	a, b := e.join("a.example/count", ""), e.join("b.example/count", "")
	a.play(t, 1)
	b.play(t, 1)
	syscall.Kill(e.workerPid("a.example/count", 1), syscall.SIGKILL)
	if code, text := a.closed(t); code != 4004 {
		t.Fatalf("a killed worker's player got %d %q, want 4004", code, text)
	}
	b.play(t, 2)
	// The player is told before the pool forgets the worker: a join in
	// between meets the dead worker and gets 4004 to retry.
	again := e.rejoin("a.example/count")
	again.play(t, 1)
	if e.workerPid("a.example/count", 2) == e.workerPid("a.example/count", 1) {
		t.Fatal("the same worker served the rejoin")
	}
}

// A game that keeps crashing is held stopped (joins get 503 saying so)
// until a sync reloads it, which starts its worker again.
func TestCrashLoopHeldUntilReload(t *testing.T) {
	e := start(t, map[string]map[string]string{"hog.example/count": counter(`, "memory": 32`)})
	for crashes := 0; ; {
		p, err := e.dial("hog.example/count", "")
		switch {
		case err == nil:
			p.ws.WriteJSON(map[string]any{"c": "grow", "a": map[string]any{}})
			if code, _ := p.closed(t); code != 4003 {
				t.Fatalf("a crash closed with %d, want 4003", code)
			}
			crashes++
			e.waitLog("game worker ended: the game ran out of its memory budget", crashes)
			continue
		case strings.Contains(err.Error(), "is restarting after a crash"), strings.Contains(err.Error(), "close 4004"):
			continue // its backoff, or handed to the worker as it ended: try again
		case strings.Contains(err.Error(), "stopped after crashing"):
		default:
			t.Fatalf("joining a crashing game: %v", err)
		}
		break
	}
	e.waitLog("game stopped after crashing repeatedly", 1)
	// A sync of its hoster-game.json reloads it: the worker starts again.
	e.put("hog.example/count/hoster-game.json", `{"tickRate": 20, "sendRate": 10, "capacity": 16, "origins": ["*"], "emptyGrace": 0, "memory": 64}`)
	e.waitLog("game worker started again by its reload", 1)
	e.join("hog.example/count", "").play(t, 1)
}

// put syncs one file (a path below the games root) through the Sync API.
func (e *env) put(rel, body string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://"+e.addr+api.PathFile+"?path="+rel, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("syncing %s: %v", rel, err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		e.t.Fatalf("syncing %s: %s", rel, res.Status)
	}
}

// A game removed by a sync (its folder deleted) closes its players'
// sockets in its worker as in one process: 1001, saying so.
func TestRemovedGameClosesItsPlayers(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter(""), "b.example/count": counter("")})
	p := e.join("a.example/count", "")
	p.play(t, 1)
	req, _ := http.NewRequest(http.MethodDelete, "http://"+e.addr+api.PathFile+"?path=a.example/count", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("deleting the game: %v %v", res, err)
	}
	if code, text := p.closed(t); code != 1001 || text != "the game was removed" {
		t.Fatalf("a removed game's player got %d %q, want 1001 saying the game was removed", code, text)
	}
	e.join("b.example/count", "").play(t, 1)
}

// A push that does not load (a syntax error at the top level) leaves the
// game on its last good version, as in one process: in its running worker,
// in the worker started at the first join after an idle end, and in the one
// started after a crash; the log says which version runs and why.
func TestLastGoodVersionInEveryWorker(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter("")}, "--worker-idle", "100ms")
	p := e.join("a.example/count", "")
	p.play(t, 1)
	good := regexp.MustCompile(`msg="game loaded" game=a\.example/count version=(\w+)`).FindStringSubmatch(e.logs.String())
	if good == nil {
		t.Fatalf("the load line names no version:\n%s", e.logs.String())
	}
	e.put("a.example/count/"+api.ServerModule, "export default {")
	e.waitLog(`msg="game not loaded; the running version, if any, keeps serving" game=a.example/count reason=`, 1)
	p.play(t, 2)
	// Its worker ends once idle: the next join starts another.
	p.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "bye"))
	e.waitLog(`msg="game worker ended" game=a.example/count`, 1)
	again := e.join("a.example/count", "")
	again.play(t, 1)
	e.waitLog(`msg="game worker runs the game's last good version: its newest files did not load" game=a.example/count worker=`+
		strconv.Itoa(e.workerPid("a.example/count", 2))+` version=`+good[1], 1)
	// A crash: the worker started at the next join runs it too.
	syscall.Kill(e.workerPid("a.example/count", 2), syscall.SIGKILL)
	if code, text := again.closed(t); code != 4004 {
		t.Fatalf("a killed worker's player got %d %q, want 4004", code, text)
	}
	e.rejoin("a.example/count").play(t, 1)
	e.workerPid("a.example/count", 3)
}

// rejoin joins key after its worker ended: a join that still meets the
// ended worker (4004), or its restart's backoff (503), gets an answer the
// library retries, and so does this.
func (e *env) rejoin(key string) *player {
	e.t.Helper()
	for {
		p, err := e.dial(key, "")
		if err == nil {
			return p
		}
		if !strings.Contains(err.Error(), "close 4004") && !strings.Contains(err.Error(), "is restarting after a crash") {
			e.t.Fatalf("joining %s: %v", key, err)
		}
	}
}

// A worker with no instance ends after the idle time; the next join starts
// another.
func TestIdleWorkerEnds(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter("")}, "--worker-idle", "100ms")
	p := e.join("a.example/count", "")
	p.play(t, 1)
	p.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(1000, "bye"))
	e.waitLog(`msg="game worker ended" game=a.example/count`, 1)
	e.join("a.example/count", "").play(t, 1)
	e.workerPid("a.example/count", 2)
}

// A hook stuck in a builtin that ignores the interrupt (a regexp's
// backtracking) has its worker ended once the budget and a grace have
// passed: its players get 4004, and the log says why.
func TestStuckHookEndsItsWorker(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter("")})
	p := e.join("a.example/count", "")
	p.ws.WriteJSON(map[string]any{"c": "spin", "a": map[string]any{}})
	if code, text := p.closed(t); code != 4004 || !strings.Contains(text, "did not stop when interrupted") {
		t.Fatalf("a stuck hook's player got %d %q, want 4004 saying why", code, text)
	}
	e.waitLog("game worker ended: a hook did not stop when interrupted", 1)
}

// A stop signalled to the server's whole process group, as systemd stops a
// service (every process of its cgroup) and a terminal's Ctrl-C stops a
// foreground job: the workers leave their end to the server, their players
// get the going-away close (1001), and no worker's end is logged as a
// failure.
func TestStopSignalToTheGroup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			e := start(t, map[string]map[string]string{"a.example/count": counter(""), "b.example/count": counter("")})
			a, b := e.join("a.example/count", ""), e.join("b.example/count", "")
			a.play(t, 1)
			b.play(t, 1)
			syscall.Kill(-e.cmd.Process.Pid, sig)
			for _, p := range []*player{a, b} {
				if code, text := p.closed(t); code != 1001 {
					t.Errorf("a player at the stop got %d %q, want 1001", code, text)
				}
			}
			if err := e.cmd.Wait(); err != nil {
				t.Errorf("the server's exit after %v: %v", sig, err)
			}
			if strings.Contains(e.logs.String(), "game worker ended:") {
				t.Errorf("the stop is logged as a worker's failure:\n%s", e.logs.String())
			}
		})
	}
}

// hostile is counter whose "go" command makes every later tick run tick
// (JavaScript, with the instance as i).
func hostile(tick string) map[string]string {
	g := counter("")
	g["hoster-instance/tick.js"] = `export default function (i) { if (i.state.go) { ` + tick + ` } }`
	g["hoster-commands/go/run.js"] = `export default function (i) { i.state.go = true; }`
	return g
}

// beside runs the hostile game beside a normal one: the normal game's
// player plays, the hostile game's player sends its command, and the
// hostile player's close code is returned once the normal player has
// played again.
func beside(t *testing.T, tick string) (int, string) {
	t.Helper()
	e := start(t, map[string]map[string]string{"bad.example/count": hostile(tick), "b.example/count": counter("")})
	b := e.join("b.example/count", "")
	b.play(t, 1)
	bad := e.join("bad.example/count", "")
	bad.ws.WriteJSON(map[string]any{"c": "go", "a": map[string]any{}})
	code, text := bad.closed(t)
	t.Logf("the hostile game's player got %d %q", code, text)
	b.play(t, 2)
	b.play(t, 3)
	return code, text
}

// String() of a deeply nested array recurses in goja's join on the Go
// stack, which no recover catches: in one process it was "fatal error:
// stack overflow". In a worker it ends only that worker and the normal game
// plays on. The million-deep array costs about the default 512 MiB
// budget to build, so its building is ended before String() runs: for
// memory (4003) or as a hook over its budget (1011), whichever comes first
// on the machine; a 300,000-deep one is built within the budget and String()
// of it runs past the hook budget without stopping (4004).
func TestDeepArrayStringEndsOnlyItsWorker(t *testing.T) {
	for _, c := range []struct {
		depth string
		codes []int
	}{{"1e6", []int{4003, 4004, 1011}}, {"3e5", []int{4004, 1011}}} {
		t.Run(c.depth, func(t *testing.T) {
			code, text := beside(t, `let a = []; for (let n = 0; n < `+c.depth+`; n++) a = [a]; String(a);`)
			if !slices.Contains(c.codes, code) {
				t.Fatalf("the hostile game's player got %d %q, want one of %v", code, text, c.codes)
			}
		})
	}
}

// JSON.stringify of a 200,000-deep object: the same.
func TestDeepJSONEndsOnlyItsWorker(t *testing.T) {
	code, text := beside(t, `let o = {}; for (let n = 0; n < 200000; n++) o = {o}; JSON.stringify(o);`)
	if code != 4004 && code != 1011 {
		t.Fatalf("the hostile game's player got %d %q, want 4004 or 1011", code, text)
	}
}

// A game whose timer runs a catastrophic regexp every tick, beside a normal
// game: the normal game's player keeps getting its updates while the
// hostile game spins (CPU fairness, counted in moves seen, not timed). The
// regexp's backtracking ignores the interrupt; on 20 letters it takes some
// tens of milliseconds, so the timer keeps its worker's core busy without
// any one call running past the hook budget (were it to, its worker would
// be ended: the normal game must play on either way).
func TestSpinningTimerBesideANormalGame(t *testing.T) {
	bad := counter("")
	bad["hoster-commands/spin/run.js"] = `export default function (i, p) {
		p.n = 1;
		i.every(0.05, () => /^(?=(a+)+$)\1/.test("a".repeat(20) + "b"));
	}`
	e := start(t, map[string]map[string]string{"bad.example/count": bad, "b.example/count": counter("")})
	b := e.join("b.example/count", "")
	b.play(t, 1)
	spinner := e.join("bad.example/count", "")
	spinner.ws.WriteJSON(map[string]any{"c": "spin", "a": map[string]any{}})
	// The update showing n at 1 comes from the tick of the spin command:
	// the timer spins from the next tick on.
	for seen := false; !seen; {
		m := spinner.next(t)
		xs, _ := m["appear"].([]any)
		xs2, _ := m["change"].([]any)
		for _, x := range append(xs, xs2...) {
			f, _ := x.(map[string]any)["f"].(map[string]any)
			seen = seen || f["n"] == 1.0
		}
	}
	// Updates carry changes only: the normal player makes 20 moves and
	// sees each in an update.
	for n := 2.0; n <= 21; n++ {
		b.play(t, n)
	}
}

// Many private rooms from one address, beside a normal game: past
// --rooms-per-minute the next is refused with 1013 before any instance
// exists, and the normal game's player plays on.
func TestPrivateRoomsPerMinute(t *testing.T) {
	const perMinute = 3
	e := start(t, map[string]map[string]string{"bad.example/count": counter(""), "b.example/count": counter("")},
		"--rooms-per-minute", strconv.Itoa(perMinute))
	b := e.join("b.example/count", "")
	b.play(t, 1)
	// The normal game's instance was the address's first new room: the
	// count is the server's.
	for r := 2; r <= perMinute; r++ {
		e.join("bad.example/count", "?room=r"+strconv.Itoa(r))
	}
	if code, text := e.refusal("bad.example/count", "?room=r"+strconv.Itoa(perMinute+1)); code != 1013 || !strings.Contains(text, "too many new rooms") {
		t.Fatalf("a room past --rooms-per-minute got %d %q, want 1013 saying why", code, text)
	}
	e.waitLog("socket refused: too many new instances from one address in a minute", 1)
	b.play(t, 2)
}

// New rooms per address are counted for the whole server, not per game: an
// address cannot lift --rooms-per-minute by spreading its rooms over games
// (each in a worker of its own).
func TestRoomsPerMinuteAcrossGames(t *testing.T) {
	const perMinute = 3
	e := start(t, map[string]map[string]string{"a.example/count": counter(""), "b.example/count": counter("")},
		"--rooms-per-minute", strconv.Itoa(perMinute))
	e.join("a.example/count", "?room=r1")
	e.join("b.example/count", "?room=r2")
	e.join("a.example/count", "?room=r3")
	if code, text := e.refusal("b.example/count", "?room=r4"); code != 1013 || !strings.Contains(text, "too many new rooms") {
		t.Fatalf("a room past --rooms-per-minute in another game got %d %q, want 1013 saying why", code, text)
	}
	e.waitLog(`msg="socket refused: too many new instances from one address in a minute" game=b.example/count`, 1)
	// A room that exists takes its players still.
	e.join("b.example/count", "?room=r2")
}

// The parent takes a new room for each socket as it hands it over: a join
// that starts an instance spends it without asking again, and one that
// joins a running instance gives it back, so the count of new rooms per
// address stays exact. With two a minute: the public instance spends one,
// its second player's goes back, a private room spends it, and the next
// is refused.
func TestRoomTakenAtHandOff(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter("")}, "--rooms-per-minute", "2")
	e.join("a.example/count", "")
	e.join("a.example/count", "")
	e.join("a.example/count", "?room=r1")
	if code, text := e.refusal("a.example/count", "?room=r2"); code != 1013 || !strings.Contains(text, "too many new rooms") {
		t.Fatalf("a third new room in a minute got %d %q, want 1013 saying why", code, text)
	}
}

// The parent answers a socket's handshake itself and hands the WebSocket
// over: a join gets its upgrade while the game's worker is stopped
// (SIGSTOP), and its welcome once the worker runs again.
func TestHandshakeAnsweredByTheParent(t *testing.T) {
	e := start(t, map[string]map[string]string{"a.example/count": counter("")})
	e.join("a.example/count", "").play(t, 1)
	pid := e.workerPid("a.example/count", 1)
	syscall.Kill(pid, syscall.SIGSTOP)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	p, err := e.open("a.example/count", "")
	if err != nil {
		t.Fatalf("the handshake of a socket to a stopped worker: %v", err)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if m := p.next(t); m["t"] != "welcome" {
		t.Fatalf("first message %v, want a welcome", m)
	}
	p.play(t, 1)
}

// With TLS served by the server itself (--tls-cert), the parent keeps the
// TLS session and relays the socket's bytes to the worker: a player plays,
// and its socket gets 4004 when the worker is killed.
func TestTLSSocketRelayed(t *testing.T) {
	cert, err := deploy.NewIPCertificate(net.IPv4(127, 0, 0, 1), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, map[string]map[string]string{"a.example/count": counter("")})
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, cert.CertPEM, 0o600)
	os.WriteFile(keyFile, cert.KeyPEM, 0o600)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert.CertPEM)
	e.tls = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	e.run(nil, "--tls-cert", certFile, "--tls-key", keyFile)
	p := e.join("a.example/count", "")
	p.play(t, 1)
	p.play(t, 2)
	syscall.Kill(e.workerPid("a.example/count", 1), syscall.SIGKILL)
	if code, text := p.closed(t); code != 4004 {
		t.Fatalf("a relayed player of a killed worker got %d %q, want 4004", code, text)
	}
}
