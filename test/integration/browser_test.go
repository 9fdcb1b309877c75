package integration

import (
	"bufio"
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
// library, loaded by a plain script tag; it reports to /arena/report (and in
// document.title, for a person watching). Both pages are opened by a link
// with ?room=: the library joins that private room by itself. The mover also
// chats twice at once, and reports the second message's refusal (a
// cooldown) and the greeting its join hook sent.
const page = `<!doctype html><title>loading</title>
<script src="hoster.client.js"></script>
<script>
  const role = new URLSearchParams(location.search).get("role");
  const g = Hoster.connect({ name: role });
  let seen = 0, hello = 0, refused = "";
  function report() {
    const s = role === "watcher" ? "saw the mover move " + seen + " times in room " + g.room
      : "mover in room " + g.room + " hello=" + hello + " refused=" + refused;
    document.title = s;
    fetch("report?" + new URLSearchParams({ role, s }));
  }
  g.on("welcome", () => {
    report();
    if (role === "mover") {
      setInterval(() => g.commands.move({ dx: 1, dy: 0 }), 100);
      g.commands.say({ text: "hi" });
      g.commands.say({ text: "hi again" });
    }
  });
  g.on("message", (type) => { if (type === "hello") { hello++; report(); } });
  g.on("change", (thing, changed) => {
    if (role === "watcher" && thing.name === "mover" && "x" in changed) { seen++; report(); }
  });
  g.on("error", (e, command) => {
    if (command === "say") { refused = e; report(); }
    else { document.title = "error " + e; fetch("report?" + new URLSearchParams({ role, s: "error " + e })); }
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
	reports := make(chan [2]string, 100)
	mux.HandleFunc("/arena/report", func(w http.ResponseWriter, r *http.Request) {
		select {
		case reports <- [2]string{r.FormValue("role"), r.FormValue("s")}:
		default:
		}
	})
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
	// Chromium says where DevTools listens on stderr.
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "DevTools listening on ws://"); ok {
				host, _, _ := strings.Cut(rest, "/")
				listening <- host
			}
		}
		close(listening)
	}()
	var devtools string
	select {
	case devtools = <-listening:
	case <-time.After(30 * time.Second):
	}
	if devtools == "" {
		t.Fatal("chromium did not start")
	}

	// Headless Chromium starts with one page; the second opens over DevTools.
	req, _ := http.NewRequest("PUT", "http://"+devtools+"/json/new?"+site.URL+"/arena/play.html?room=duel1%26role=mover", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("opening the second page: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	// Wait for the watcher to have seen the mover move three times in their
	// room, and for the mover to show its greeting and the refusal.
	deadline := time.After(30 * time.Second)
	var got []string
	watched, moverOK := false, false
	for !watched || !moverOK {
		select {
		case r := <-reports:
			got = append(got, r[0]+": "+r[1])
			if strings.HasPrefix(r[1], "error") {
				t.Fatalf("the %s page reported %q", r[0], r[1])
			}
			if r[0] == "watcher" && strings.HasPrefix(r[1], "saw the mover move 3 times in room duel1") {
				watched = true
			}
			if r[0] == "mover" && r[1] == "mover in room duel1 hello=1 refused=wait a second between messages" {
				moverOK = true
			}
		case <-deadline:
			t.Fatalf("the pages never showed the room, the moves, the greeting and the refusal; reports: %v", got)
		}
	}
}
