package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// page drives the example game from a browser page through its generated
// library, loaded by a plain script tag; it reports in document.title. Both
// pages are opened by a link with ?room=: the library joins that private
// room by itself. The mover also chats twice at once, and shows the second
// message's refusal (a cooldown) and the greeting its join hook sent.
const page = `<!doctype html><title>loading</title>
<script src="hoster.client.js"></script>
<script>
  const role = new URLSearchParams(location.search).get("role");
  const g = Hoster.connect({ name: role });
  let seen = 0, hello = 0, refused = "";
  function show() {
    document.title = role === "watcher" ? "saw the mover move " + seen + " times in room " + g.room
      : "mover in room " + g.room + " hello=" + hello + " refused=" + refused;
  }
  g.on("welcome", () => {
    show();
    if (role === "mover") {
      setInterval(() => g.commands.move({ dx: 1, dy: 0 }), 100);
      g.commands.say({ text: "hi" });
      g.commands.say({ text: "hi again" });
    }
  });
  g.on("message", (type) => { if (type === "hello") { hello++; show(); } });
  g.on("change", (thing, changed) => {
    if (role === "watcher" && thing.name === "mover" && "x" in changed) { seen++; show(); }
  });
  g.on("error", (e, command) => {
    if (command === "say") { refused = e; show(); } else document.title = "error " + e;
  });
</script>`

func TestExampleGameInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (make test-deps installs Debian's chromium as root); skipping the browser test")
	}
	// The example, generated, run by the runtime.
	root := filepath.Join(t.TempDir(), "games")
	if err := os.CopyFS(root, os.DirFS(filepath.Join(repoRoot(t), "examples", "sites"))); err != nil {
		t.Fatal(err)
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	rt, err := runtime.New(runtime.Options{GamesRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	games := httptest.NewServer(rt)
	defer games.Close()
	defer rt.Shutdown(t.Context())

	// The page's origin stands where Caddy stands: the game's routes go to
	// the server with the game's domain as Host.
	target, _ := url.Parse(games.URL)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = "example.com"
		r.Out.Header.Set("Origin", "https://example.com")
	}}
	mux := http.NewServeMux()
	mux.Handle("/arena", proxy)
	mux.Handle("/arena/hoster.client.js", proxy)
	mux.HandleFunc("/arena/play.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page))
	})
	site := httptest.NewServer(mux)
	defer site.Close()

	// Chromium's helpers may outlive it for a moment: the profile is removed
	// without failing the test on their leftovers.
	profile, err := os.MkdirTemp("", "hoster-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--remote-debugging-port=0",
		site.URL+"/arena/play.html?room=duel1&role=watcher")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // to stop its helpers too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	// Chromium writes its DevTools port into the profile once it listens.
	var devtools string
	for start := time.Now(); devtools == ""; time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil {
			if port, _, ok := strings.Cut(string(b), "\n"); ok && port != "" {
				devtools = "127.0.0.1:" + port
			}
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("chromium did not start")
		}
	}

	// Headless Chromium starts with one page; the second opens over DevTools.
	req, _ := http.NewRequest("PUT", "http://"+devtools+"/json/new?"+site.URL+"/arena/play.html?room=duel1%26role=mover", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("opening the second page: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	// Poll the pages' titles until the watcher has seen the mover move in
	// their room, and the mover shows its greeting and the refusal.
	deadline := time.Now().Add(30 * time.Second)
	var titles []string
	moves, moverOK := 0, false
	for time.Now().Before(deadline) {
		if moves >= 3 && moverOK {
			return
		}
		resp, err := http.Get("http://" + devtools + "/json/list")
		if err == nil {
			var targets []struct{ Type, Title, URL string }
			json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			titles = titles[:0]
			for _, tg := range targets {
				if tg.Type == "page" {
					titles = append(titles, fmt.Sprintf("%s: %s", tg.URL[strings.LastIndex(tg.URL, "=")+1:], tg.Title))
					if strings.HasPrefix(tg.Title, "error") {
						t.Fatalf("a page reported %q", tg.Title)
					}
					if strings.Contains(tg.URL, "watcher") && strings.HasPrefix(tg.Title, "saw the mover move") &&
						strings.HasSuffix(tg.Title, "in room duel1") {
						fmt.Sscanf(strings.TrimPrefix(tg.Title, "saw the mover move "), "%d", &moves)
					}
					if strings.Contains(tg.URL, "mover") && tg.Title == "mover in room duel1 hello=1 refused=wait a second between messages" {
						moverOK = true
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the pages never showed the room, the moves, the greeting and the refusal; pages: %v", titles)
}
