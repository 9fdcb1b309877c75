// Package integration runs the programs as users run them: built binaries,
// Debian's caddy in front terminating TLS, and real sockets through it.
package integration

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestThroughCaddy is the deployment of the operator's guide on loopback:
// hoster-server init, hoster-server serve, Debian's caddy with the generated
// Caddyfile, then the client through Caddy with the pinned certificate.
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
	bin := buildBinaries(t)
	dir := t.TempDir()
	hostingRoot, logsRoot := filepath.Join(dir, "srv"), filepath.Join(dir, "logs")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ask := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	httpsPort, httpPort := freePort(t), freePort(t)

	// init: directories, token, certificate, Caddyfile.
	initOut, err := exec.Command(filepath.Join(bin, "hoster-server"), "init",
		"--hosting-root", hostingRoot, "--logs-root", logsRoot, "--ip", "127.0.0.1",
		"--listen", listen, "--ask-listen", ask,
		"--https-port", fmt.Sprint(httpsPort), "--http-port", fmt.Sprint(httpPort)).CombinedOutput()
	if err != nil {
		t.Fatalf("hoster-server init: %v\n%s", err, initOut)
	}
	// The printed client settings are pasted as they are.
	settings := regexp.MustCompile(`(?s)\{\s*"hoster-config-server".*?\}`).Find(initOut)
	if settings == nil {
		t.Fatalf("init printed no client settings:\n%s", initOut)
	}
	var cfg map[string]string
	if err := json.Unmarshal(settings, &cfg); err != nil {
		t.Fatalf("client settings do not parse: %v\n%s", err, settings)
	}
	configFile := filepath.Join(dir, "hoster.json")
	if err := os.WriteFile(configFile, settings, 0o600); err != nil {
		t.Fatal(err)
	}

	// Offline, a game domain's certificate comes from Caddy's own CA rather
	// than ACME; the rest is the Caddyfile as init wrote it.
	caddyfile := filepath.Join(hostingRoot, "Caddyfile")
	cf, _ := os.ReadFile(caddyfile)
	offline := strings.Replace(strings.Replace(string(cf), "\t\ton_demand\n", "\t\ton_demand\n\t\tissuer internal\n", 1),
		"{\n", "{\n\tskip_install_trust\n", 1)
	if !strings.Contains(offline, "issuer internal") || !strings.Contains(offline, "encode zstd gzip") {
		t.Fatalf("the Caddyfile has changed shape:\n%s", cf)
	}
	os.WriteFile(caddyfile, []byte(offline), 0o644)

	server := startProcess(t, "hoster-server", exec.Command(filepath.Join(bin, "hoster-server"), "serve",
		"--hosting-root", hostingRoot, "--logs-root", logsRoot,
		"--listen", listen, "--ask-listen", ask, "--reload-debounce", "100ms"))
	caddyCmd := exec.Command(caddy, "run", "--adapter", "caddyfile", "--config", filepath.Join(hostingRoot, "Caddyfile"))
	caddyCmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	proxy := startProcess(t, "caddy", caddyCmd)
	server.waitFor(t, "msg=serving")
	proxy.waitFor(t, "serving initial configuration")

	base := cfg["hoster-config-server"]

	hoster := func(args ...string) (string, int) {
		cmd := exec.Command(filepath.Join(bin, "hoster"), append([]string{"--config", configFile}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "none"))
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), cfg["hoster-config-apiToken"]) {
			t.Fatalf("hoster %v printed the token", args)
		}
		return string(out), code
	}

	if out, code := hoster("version"); code != 0 || !strings.Contains(out, "1") {
		t.Fatalf("hoster version: exit %d\n%s", code, out)
	}

	// Sync a copy of the example sites through Caddy with the pinned certificate.
	sites := filepath.Join(dir, "sites")
	if err := os.CopyFS(sites, os.DirFS(filepath.Join(repoRoot(t), "examples", "sites"))); err != nil {
		t.Fatal(err)
	}
	if out, code := hoster("sync", sites); code != 0 {
		t.Fatalf("hoster sync: exit %d\n%s", code, out)
	}
	for _, f := range []string{"hoster-game.json", "hoster.server.js", "hoster.client.js"} {
		if _, err := os.Stat(filepath.Join(hostingRoot, "hoster-games", "example.com", "arena", f)); err != nil {
			t.Errorf("after sync, the server lacks %s: %v", f, err)
		}
	}
	// A wrong pin is refused.
	badConfig := filepath.Join(dir, "bad.json")
	bad := map[string]string{}
	for k, v := range cfg {
		bad[k] = v
	}
	bad["hoster-config-certSha256"] = strings.Repeat("ab", 32)
	b, _ := json.Marshal(bad)
	os.WriteFile(badConfig, b, 0o600)
	if out, code := hoster("--config", badConfig, "version"); code == 0 || !strings.Contains(out, strings.Repeat("ab", 32)) {
		t.Errorf("a wrong pin must fail naming the fingerprints: exit %d\n%s", code, out)
	}

	// A game socket through Caddy: TLS by IP, Host selects the domain.
	server.waitFor(t, `msg="game loaded" game=example.com/arena`)
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, HandshakeTimeout: 10 * time.Second}
	wsURL := strings.Replace(base, "https://", "wss://", 1) + "/arena?name=caddy"
	conn, resp, err := dialer.Dial(wsURL, http.Header{"Host": {"example.com"}, "Origin": {"https://example.com"}})
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
	conn.Close()

	gamePagesThroughCaddy(t, httpsPort)

	// Pull Caddy's own access log back: real Caddy lines, byte for byte.
	mirror := filepath.Join(dir, "mirror")
	if out, code := hoster("pull", mirror); code != 0 {
		t.Fatalf("hoster pull: exit %d\n%s", code, out)
	}
	got, err := os.ReadFile(filepath.Join(mirror, "web-logs", "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(logsRoot, "web-logs", "access.log"))
	if !bytes.HasPrefix(want, got) || len(got) == 0 {
		t.Fatalf("the mirrored access log is not a prefix of Caddy's (%d vs %d bytes)", len(got), len(want))
	}
	sc := bufio.NewScanner(bytes.NewReader(got))
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
		if strings.Contains(sc.Text(), cfg["hoster-config-apiToken"]) {
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

// gamePagesThroughCaddy opens https://example.com/arena/ through Caddy in
// two Chromium pages (example.com resolving to Caddy on loopback), as players
// would: the page and its library arrive compressed, each page connects, and
// each sees the other move.
func gamePagesThroughCaddy(t *testing.T, httpsPort int) {
	// Caddy compresses the page for any client that asks.
	caddy := fmt.Sprintf("127.0.0.1:%d", httpsPort)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "example.com"},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, caddy)
		},
	}}
	req, _ := http.NewRequest("GET", "https://example.com/arena/", nil)
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

	const url = "https://example.com/arena/"
	chrome := startChromium(t, "about:blank", "--ignore-certificate-errors",
		fmt.Sprintf("--host-resolver-rules=MAP example.com:443 %s", caddy))
	tabs := []*tab{chrome.attach(chrome.open(url)), chrome.attach(chrome.open(url))}
	// Each page connects: the example page keeps its connection in "game",
	// and says when it is welcomed. A page not yet past about:blank never
	// answers there: its navigation ends that evaluation, which is tried
	// again in the game's page.
	me := make([]string, 2)
	for i, tb := range tabs {
		var err error
		for try := 0; try < 5 && me[i] == ""; try++ {
			err = tb.await(`new Promise((resolve, reject) => {
				if (location.href === "about:blank") return; // the page is still on its way
				const welcomed = () => {
					if (typeof game === "undefined") reject(new Error("the page has no game"));
					else if (game.me) resolve(game.me);
					else game.on("welcome", m => resolve(m.player));
				};
				if (document.readyState === "loading") addEventListener("DOMContentLoaded", welcomed);
				else welcomed();
			})`, 30*time.Second, &me[i])
		}
		if me[i] == "" {
			var status string
			tb.eval(`document.getElementById("status").textContent`, &status)
			t.Fatalf("page %d never connected (%v); it says %q", i, err, status)
		}
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
