// Package integration runs the programs as users run them: built binaries,
// Debian's caddy in front terminating TLS, and real sockets through it.
package integration

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/waitbuf"
)

// repoRoot is the module's root, two levels up from this package.
func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// buildBinaries builds hoster and hoster-server into a temporary directory.
func buildBinaries(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"hoster", "hoster-server"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./cmd/"+name)
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", name, err, out)
		}
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProcess starts a long-running command and stops it at the end of the
// test, logging its output if the test failed. Its output can be waited on.
func startProcess(t *testing.T, name string, cmd *exec.Cmd) output {
	t.Helper()
	out := output{waitbuf.New()}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	return out
}

// output is a process's output, which a test can wait on.
type output struct{ *waitbuf.Buffer }

// waitFor waits until the output holds sub.
func (o output) waitFor(t *testing.T, sub string) {
	t.Helper()
	if !o.WaitFor(sub, 1, 30*time.Second) {
		t.Fatalf("the output never said %q:\n%s", sub, o)
	}
}

// trialSteps are the commands of the operators' guide's "Trying it on one
// machine", in order: every line of its sh blocks.
func trialSteps(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Trying it on one machine\n")
	if !ok {
		t.Fatal(`docs/operators.md has no section "Trying it on one machine"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var steps []string
	inBlock := false
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "```sh":
			inBlock = true
		case line == "```":
			inBlock = false
		case inBlock && line != "":
			steps = append(steps, line)
		}
	}
	if len(steps) < 8 {
		t.Fatalf("the trial in docs/operators.md has %d commands:\n%s", len(steps), strings.Join(steps, "\n"))
	}
	return steps
}

// TestThroughCaddy runs the operators' guide's trial on one machine word for
// word (only its ports are free ones here): hoster-server init --local,
// hoster-server serve, caddy with the generated Caddyfile, the example game
// synced through Caddy trusting Caddy's own CA, played in Chromium, and the
// logs pulled back. Then it checks what the guide promises.
func TestThroughCaddy(t *testing.T) {
	// HOSTER_TEST_CADDY names another caddy binary, to check a newer Caddy.
	caddy, err := exec.LookPath(cmp.Or(os.Getenv("HOSTER_TEST_CADDY"), "caddy"))
	if err != nil {
		t.Skip("caddy is not installed (make test-deps installs Debian's caddy as root); skipping the proxy test")
	}
	if v, err := exec.Command(caddy, "version").Output(); err == nil {
		t.Logf("caddy %s", strings.TrimSpace(string(v)))
	}
	if testing.Short() {
		t.Skip("-short: skipping the proxy test")
	}
	steps := trialSteps(t)
	tr := newTrial(t, caddy)
	for _, step := range steps {
		tr.step(step)
	}
	tr.checks()
}

// trial is the guide's trial being run in a temporary directory standing
// for the repository's root (bin/ built, examples/ copied).
type trial struct {
	t                 *testing.T
	dir, caddy        string
	httpsPort         int
	env               []string
	server, proxy     output
	chromeFlags       []string
	pageURL, settings string
	token             string
}

func newTrial(t *testing.T, caddy string) *trial {
	dir := t.TempDir()
	bin := buildBinaries(t)
	os.Mkdir(filepath.Join(dir, "bin"), 0o755)
	for _, name := range []string{"hoster", "hoster-server"} {
		if err := os.Symlink(filepath.Join(bin, name), filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(dir, "examples", "sites"), os.DirFS(filepath.Join(repoRoot(t), "examples", "sites"))); err != nil {
		t.Fatal(err)
	}
	tr := &trial{t: t, dir: dir, caddy: caddy, httpsPort: freePort(t)}
	// Free ports in place of the guide's: through the environment for init
	// and serve, in the text of the other commands.
	tr.env = append(os.Environ(), "PWD="+dir, "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "none"),
		fmt.Sprintf("HOSTER_SERVER_HTTPS_PORT=%d", tr.httpsPort), fmt.Sprintf("HOSTER_SERVER_HTTP_PORT=%d", freePort(t)),
		fmt.Sprintf("HOSTER_SERVER_LISTEN=127.0.0.1:%d", freePort(t)), fmt.Sprintf("HOSTER_SERVER_ASK_LISTEN=127.0.0.1:%d", freePort(t)))
	return tr
}

// step runs one command of the guide.
func (tr *trial) step(line string) {
	t := tr.t
	t.Logf("step: %s", line)
	line = strings.ReplaceAll(line, "8443", fmt.Sprint(tr.httpsPort))
	switch {
	case line == "make build":
		// built by newTrial
	case strings.HasPrefix(line, "bin/hoster-server serve "):
		tr.server = startProcess(t, "hoster-server", tr.command("exec "+line))
		tr.server.waitFor(t, "msg=serving")
	case strings.HasPrefix(line, "caddy run "):
		tr.proxy = startProcess(t, "caddy", tr.command("exec "+tr.caddy+strings.TrimPrefix(line, "caddy")))
		// Serving starts before the IP's certificate is there.
		tr.proxy.waitFor(t, `"identifier":"127.0.0.1"`)
		tr.proxy.waitFor(t, "certificate obtained successfully")
	case strings.HasPrefix(line, "export "):
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		value := tr.run(line + `; printf %s "$` + name + `"`)
		tr.env = append(tr.env, name+"="+value)
	case strings.HasPrefix(line, "chromium "):
		for _, arg := range strings.Split(tr.run(`printf '%s\n' `+strings.TrimPrefix(line, "chromium ")), "\n") {
			if strings.HasPrefix(arg, "--") {
				tr.chromeFlags = append(tr.chromeFlags, arg)
			} else if arg != "" {
				tr.pageURL = arg
			}
		}
	default:
		out := tr.run(line)
		if strings.HasPrefix(line, "bin/hoster-server init") {
			tr.settings = filepath.Join(tr.dir, "hoster-trial", "hosting", "hoster.json")
			var cfg map[string]string
			b, _ := os.ReadFile(tr.settings)
			if err := json.Unmarshal(b, &cfg); err != nil || !strings.Contains(out, cfg["hoster-config-apiToken"]) {
				t.Fatalf("init --local wrote no client settings or did not show its token (%v):\n%s", err, out)
			}
			tr.token = cfg["hoster-config-apiToken"]
		} else if tr.token != "" && strings.Contains(out, tr.token) {
			t.Fatalf("%s printed the token", line)
		}
		if strings.Contains(line, " sync ") {
			// The server reloads the synced game a debounce after the sync:
			// a page opened before that would find no game.
			tr.server.waitFor(t, `msg="game loaded" game=example.com/arena`)
		}
	}
}

// command is sh running line in the trial's directory.
func (tr *trial) command(line string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = tr.dir, tr.env
	return cmd
}

// run runs line to its end; it must succeed.
func (tr *trial) run(line string) string {
	tr.t.Helper()
	out, err := tr.command(line).CombinedOutput()
	if err != nil {
		tr.t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// hoster runs the client with the trial's settings and returns its output
// and exit status.
func (tr *trial) hoster(env []string, args ...string) (string, int) {
	cmd := exec.Command(filepath.Join(tr.dir, "bin", "hoster"), append([]string{"--config", tr.settings}, args...)...)
	cmd.Dir, cmd.Env = tr.dir, env
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		tr.t.Fatal(err)
	}
	if strings.Contains(string(out), tr.token) {
		tr.t.Fatalf("hoster %v printed the token", args)
	}
	return string(out), code
}

// checks verifies what the trial's steps promised.
func (tr *trial) checks() {
	t := tr.t
	if tr.server.Buffer == nil || tr.proxy.Buffer == nil || tr.pageURL == "" || tr.token == "" {
		t.Fatal("the guide's trial no longer starts the server, Caddy and the browser")
	}
	hostingRoot := filepath.Join(tr.dir, "hoster-trial", "hosting")
	for _, f := range []string{"hoster-game.json", "hoster.server.js", "hoster.client.js"} {
		if _, err := os.Stat(filepath.Join(hostingRoot, "hoster-games", "example.com", "arena", f)); err != nil {
			t.Errorf("after sync, the server lacks %s: %v", f, err)
		}
	}
	// Without Caddy's root trusted and with no pin, nothing is sent: exit 2
	// saying how to pin. A wrong pin is refused naming both fingerprints.
	if out, code := tr.hoster(append(tr.env, "SSL_CERT_FILE="+filepath.Join(tr.dir, "none.pem")), "version"); code != 2 || !strings.Contains(out, "hoster-config-certSha256") {
		t.Errorf("an untrusted certificate and no pin: exit %d, want 2 saying how to pin\n%s", code, out)
	}
	wrong := strings.Repeat("ab", 32)
	if out, code := tr.hoster(tr.env, "--cert-sha256", wrong, "version"); code == 0 || !strings.Contains(out, wrong) {
		t.Errorf("a wrong pin must fail naming the fingerprints: exit %d\n%s", code, out)
	}

	// A game socket through Caddy from the trial page's origin, its
	// certificate verified against Caddy's root.
	roots := x509.NewCertPool()
	rootPEM, err := os.ReadFile(filepath.Join(hostingRoot, "caddy", "pki", "authorities", "local", "root.crt"))
	if err != nil || !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("Caddy's root certificate: %v", err)
	}
	caddyAddr := fmt.Sprintf("127.0.0.1:%d", tr.httpsPort)
	origin := fmt.Sprintf("https://example.com:%d", tr.httpsPort)
	tr.server.waitFor(t, `msg="game loaded" game=example.com/arena`)
	gameSocketThroughCaddy(t, caddyAddr, origin, roots)
	gamePagesThroughCaddy(t, caddyAddr, tr.pageURL, tr.chromeFlags, roots)

	// Pull again: Caddy's own access log, real Caddy lines, byte for byte.
	if out, code := tr.hoster(tr.env, "pull", filepath.Join(tr.dir, "mirror")); code != 0 {
		t.Fatalf("hoster pull: exit %d\n%s", code, out)
	}
	got, err := os.ReadFile(filepath.Join(tr.dir, "mirror", "web-logs", "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(tr.dir, "hoster-trial", "logs", "web-logs", "access.log"))
	if !bytes.HasPrefix(want, got) || len(got) == 0 {
		t.Fatalf("the mirrored access log is not a prefix of Caddy's (%d vs %d bytes)", len(got), len(want))
	}
	checkAccessLines(t, got, tr.token)
}

// checkAccessLines checks that log holds Caddy's access lines, without the
// token.
func checkAccessLines(t *testing.T, log []byte, token string) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	lines, authorized := 0, 0
	for sc.Scan() {
		var line struct {
			Logger  string
			Msg     string
			Request struct {
				Host, URI string
				Headers   map[string][]string
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("access line does not parse: %v: %s", err, sc.Text())
		}
		if !strings.HasPrefix(line.Logger, "http.log.access") || line.Msg != "handled request" || line.Request.Host == "" {
			t.Fatalf("not a Caddy access line: %s", sc.Text())
		}
		if strings.Contains(sc.Text(), token) {
			t.Fatal("Caddy's access log holds the token")
		}
		// What docs/operators.md says Caddy writes for the header: an empty
		// list (Caddy 2.6) or ["REDACTED"] (Caddy 2.7 and later).
		if auth, ok := line.Request.Headers["Authorization"]; ok {
			if len(auth) > 1 || len(auth) == 1 && auth[0] != "REDACTED" {
				t.Fatalf("Caddy logged the Authorization header as %q", auth)
			}
			authorized++
		}
		lines++
	}
	if lines == 0 || authorized == 0 {
		t.Fatalf("%d access lines mirrored, %d of them of a request with the token: want some of each", lines, authorized)
	}
}

// gameSocketThroughCaddy plays a move on a game socket through Caddy:
// TLS by IP, Host selecting the domain, the page's origin sent.
func gameSocketThroughCaddy(t *testing.T, caddyAddr, origin string, roots *x509.CertPool) {
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := dialer.Dial("wss://"+caddyAddr+"/arena?name=caddy", http.Header{"Host": {"example.com"}, "Origin": {origin}})
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("game socket through caddy: %v %s", err, status)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	var welcome struct{ T, Game, Player string }
	if err := conn.ReadJSON(&welcome); err != nil || welcome.T != "welcome" || welcome.Game != "example.com/arena" {
		t.Fatalf("welcome through caddy: %+v, %v", welcome, err)
	}
	if err := conn.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 1, "dy": 0}}); err != nil {
		t.Fatal(err)
	}
	for seen := false; !seen; {
		var m struct {
			T      string
			Change []struct{ ID string }
		}
		if err := conn.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for an update through caddy: %v", err)
		}
		for _, c := range m.Change {
			seen = seen || c.ID == welcome.Player
		}
	}
}

// gamePagesThroughCaddy opens url (a page of example.com's arena) through
// Caddy in two Chromium pages started with chromeFlags (the guide's: they
// make example.com resolve to Caddy on loopback), as players would: the page
// and its library arrive compressed, each page connects, and each sees the
// other move.
func gamePagesThroughCaddy(t *testing.T, caddyAddr, url string, chromeFlags []string, roots *x509.CertPool) {
	// Caddy compresses the page for any client that asks.
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "example.com"},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, caddyAddr)
		},
	}}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept-Encoding", "zstd, gzip")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the page through caddy: %v", err)
	}
	resp.Body.Close()
	if enc := resp.Header.Get("Content-Encoding"); resp.StatusCode != 200 || (enc != "zstd" && enc != "gzip") {
		t.Fatalf("the page through caddy: %s, Content-Encoding %q, want it compressed", resp.Status, enc)
	}
	// Revalidation through Caddy, reported for the operators' guide.
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Logf("revalidating the compressed page through caddy with its ETag %s: %s", req.Header.Get("If-None-Match"), resp.Status)
	}

	chrome := startChromium(t, "about:blank", chromeFlags...)
	tabs := []*tab{chrome.attach(chrome.open(url)), chrome.attach(chrome.open(url))}
	me := make([]string, 2)
	for i, tb := range tabs {
		me[i] = welcomed(t, tb, i)
	}
	// The page and its library came compressed (fewer bytes on the wire than
	// in the body).
	var sizes []int
	if err := tabs[0].eval(`(() => {
		const n = performance.getEntriesByType("navigation")[0];
		const l = performance.getEntriesByName(new URL("hoster.client.js", location).href)[0];
		return [n.encodedBodySize, n.decodedBodySize, l.encodedBodySize, l.decodedBodySize];
	})()`, &sizes); err != nil || len(sizes) != 4 || sizes[0] >= sizes[1] || sizes[2] >= sizes[3] {
		t.Fatalf("page and library sizes on the wire and decoded: %v %v; want them compressed", sizes, err)
	}
	t.Logf("through caddy: page %d of %d bytes on the wire, library %d of %d", sizes[0], sizes[1], sizes[2], sizes[3])

	// Each moves; the other sees it, told by its page's change event.
	for i := range tabs {
		mover, watcher := tabs[i], tabs[1-i]
		var start float64
		if err := watcher.await(fmt.Sprintf(`new Promise(resolve => {
			const p = game.players[%[1]q];
			if (p) return resolve(p.x);
			game.on("appear", function seen(o) { if (o.id === %[1]q) { game.off("appear", seen); resolve(o.x); } });
		})`, me[i]), 20*time.Second, &start); err != nil {
			t.Fatalf("page %d never saw page %d (%s): %v", 1-i, i, me[i], err)
		}
		if err := watcher.eval(fmt.Sprintf(`void (window.moved = new Promise(resolve => {
			game.on("change", function moved(o, changed) {
				if (o.id === %[1]q && "x" in changed && o.x !== %[2]v) { game.off("change", moved); resolve(o.x); }
			});
		}))`, me[i], start), nil); err != nil {
			t.Fatal(err)
		}
		dx := 1
		if start > 50 {
			dx = -1
		}
		if err := mover.eval(fmt.Sprintf(`game.commands.move({dx: %d, dy: 0})`, dx), nil); err != nil {
			t.Fatal(err)
		}
		var x float64
		if err := watcher.await(`window.moved`, 20*time.Second, &x); err != nil {
			t.Fatalf("page %d never saw page %d (%s) move from %v: %v", 1-i, i, me[i], start, err)
		}
		mover.eval(`game.commands.move({dx: 0, dy: 0})`, nil)
	}
}

// welcomed waits until the example page in tb (page n, for messages)
// connects, and returns its player: the page keeps its connection in
// "game", and says when it is welcomed. A page not yet past about:blank
// never answers there: its navigation ends that evaluation, which is tried
// again in the game's page.
func welcomed(t *testing.T, tb *tab, n int) string {
	t.Helper()
	var me string
	var err error
	for try := 0; try < 5 && me == ""; try++ {
		err = tb.await(`new Promise((resolve, reject) => {
			if (location.href === "about:blank") return; // the page is still on its way
			const welcomed = () => {
				if (typeof game === "undefined") reject(new Error("the page has no game"));
				else if (game.me) resolve(game.me);
				else game.on("welcome", m => resolve(m.player));
			};
			if (document.readyState === "loading") addEventListener("DOMContentLoaded", welcomed);
			else welcomed();
		})`, 30*time.Second, &me)
	}
	if me == "" {
		var status string
		tb.eval(`document.getElementById("status").textContent`, &status)
		t.Fatalf("page %d never connected (%v); it says %q", n, err, status)
	}
	return me
}
