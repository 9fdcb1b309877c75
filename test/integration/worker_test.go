package integration

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Chromium player through Caddy plays on after its game's worker is
// killed: the parent closes the player's socket with 4004, the browser
// library rejoins, a fresh worker takes the socket handed over, and the
// player's moves show. The server and Caddy are the operators' guide's
// trial (docs/operators.md), up to its page.
func TestKilledWorkerThroughCaddyInChromium(t *testing.T) {
	caddy, err := exec.LookPath(cmp.Or(os.Getenv("HOSTER_TEST_CADDY"), "caddy"))
	if err != nil {
		t.Skip("caddy is not installed (make test-deps installs Debian's caddy as root); skipping the proxy test")
	}
	if testing.Short() {
		t.Skip("-short: skipping the proxy test")
	}
	tr := newTrial(t, caddy)
	for _, step := range trialSteps(t) {
		tr.step(step)
		if strings.HasPrefix(step, "chromium ") {
			break // the page is opened here
		}
	}
	if tr.pageURL == "" {
		t.Fatal("the guide's trial no longer opens the game's page")
	}
	chrome := startChromium(t, "about:blank", tr.chromeFlags...)
	tb := chrome.attach(chrome.open(tr.pageURL))
	first := welcomed(t, tb, 0)
	pid := workerPid(t, tr.server, 1)

	// The page notes its closes and waits for its next welcome.
	if err := tb.eval(`void (window.closes = [], game.on("close", c => closes.push(c.code)),
		window.rejoined = new Promise(resolve => game.on("welcome", m => resolve(m.player))))`, nil); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the game's worker %d: %v", pid, err)
	}
	var again string
	if err := tb.await(`window.rejoined`, 30*time.Second, &again); err != nil {
		t.Fatalf("the page never rejoined after its worker was killed: %v", err)
	}
	var closes []int
	if err := tb.eval(`closes`, &closes); err != nil || len(closes) == 0 || closes[0] != 4004 {
		t.Fatalf("the page's closes %v (%v), want 4004 first", closes, err)
	}
	if next := workerPid(t, tr.server, 2); next == pid {
		t.Fatalf("the killed worker %d served the rejoin", pid)
	}
	t.Logf("player %s rejoined as %s after its worker was killed", first, again)

	// It plays: once it sees itself, its move is seen in an update from the
	// new worker.
	var start float64
	if err := tb.await(`new Promise(resolve => {
		const p = game.players[game.me];
		if (p) return resolve(p.x);
		game.on("appear", function seen(o) { if (o.id === game.me) { game.off("appear", seen); resolve(o.x); } });
	})`, 20*time.Second, &start); err != nil {
		t.Fatalf("the rejoined player never saw itself: %v", err)
	}
	if err := tb.eval(fmt.Sprintf(`void (window.moved = new Promise(resolve => {
		game.on("change", function moved(o, changed) { if (o.id === game.me && "x" in changed && o.x !== %v) { game.off("change", moved); resolve(o.x); } });
	}))`, start), nil); err != nil {
		t.Fatal(err)
	}
	dx := 1
	if start > 50 {
		dx = -1
	}
	if err := tb.eval(fmt.Sprintf(`game.commands.move({dx: %d, dy: 0})`, dx), nil); err != nil {
		t.Fatal(err)
	}
	var x float64
	if err := tb.await(`window.moved`, 20*time.Second, &x); err != nil {
		t.Fatalf("the rejoined player's move was never seen: %v", err)
	}
}

// workerPid is the pid of the nth (1-based) worker the server started for
// example.com's arena, as its log says.
func workerPid(t *testing.T, server output, nth int) int {
	t.Helper()
	re := regexp.MustCompile(`msg="game worker started" game=example\.com/arena worker=(\d+)`)
	if !server.Until(func(s string) bool { return len(re.FindAllString(s, -1)) >= nth }, 30*time.Second) { // a hang guard
		t.Fatalf("the server never started worker %d for the game:\\n%s", nth, server)
	}
	pid, _ := strconv.Atoi(re.FindAllStringSubmatch(server.String(), -1)[nth-1][1])
	return pid
}
