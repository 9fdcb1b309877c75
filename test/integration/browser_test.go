package integration

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/pages"
	"github.com/hoster-dev/hoster/pkg/runtime"
	"github.com/hoster-dev/hoster/pkg/store"
)

// page drives the example game from a browser page through its generated
// library, loaded by a plain script tag; it reports to /arena/report (and in
// document.title, for a person watching). Both pages are opened by a link
// with ?room=: the library joins that private room by itself. The mover also
// chats twice at once, and reports the second message's refusal (a
// cooldown), the greeting its join hook sent, and the link it would share
// (its room, without its role).
const page = `<!doctype html><title>loading</title>
<script src="hoster.client.js"></script>
<script>
  const role = new URLSearchParams(location.search).get("role");
  const g = Hoster.connect({ name: role });
  let seen = 0, hello = 0, refused = "";
  function report() {
    const s = role === "watcher" ? "saw the mover move " + seen + " times in room " + g.room
      : "mover in room " + g.room + " hello=" + hello + " refused=" + refused + " link=" + Hoster.roomLink(g.room);
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
	skipWithoutChromium(t)
	// The example, generated, run by the runtime.
	root := copyExampleSites(t, "games")
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	reports := make(chan [2]string, 100)
	site := pageSite(t, root, "example.com", "arena", page, func(r *http.Request) {
		select {
		case reports <- [2]string{r.FormValue("role"), r.FormValue("s")}:
		default:
		}
	})

	// Headless Chromium starts with one page; the second opens over DevTools.
	chrome := startChromium(t, site+"/arena/play.html?room=duel1&role=watcher")
	chrome.open(site + "/arena/play.html?room=duel1%26role=mover")

	// Wait for the watcher to have seen the mover move three times in their
	// room, and for the mover to show its greeting, the refusal and a room
	// link that carries nothing of its page's query but the room.
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
			if r[0] == "mover" && r[1] == "mover in room duel1 hello=1 refused=wait a second between messages link="+site+"/arena/play.html?room=duel1" {
				moverOK = true
			}
		case <-deadline:
			t.Fatalf("the pages never showed the room, the moves, the greeting, the refusal and the room link; reports: %v", got)
		}
	}
}

// firstReport opens html as /<game>/play.html of a pageSite in Chromium and
// returns the body of the first report the page posts, failing the test
// after 60 s without one (waiting for what). rewrite as for pageSite.
func firstReport(t *testing.T, root, domain, game, html, waitingFor string, rewrite ...func(*httputil.ProxyRequest)) []byte {
	t.Helper()
	reports := make(chan []byte, 1)
	site := pageSite(t, root, domain, game, html, func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case reports <- b:
		default:
		}
	}, rewrite...)
	startChromium(t, site+"/"+game+"/play.html")
	select {
	case b := <-reports:
		return b
	case <-time.After(60 * time.Second):
		t.Fatalf("the page never reported %s", waitingFor)
		return nil
	}
}

// pageSite runs the generated games under root and a site that stands where
// Caddy stands for one game: /<game> and /<game>/hoster.client.js go to the
// server's games handler (the runtime behind the pages, as hoster-server
// wires them) with the game's domain as Host (and its origin), /<game>/play.html
// is html, and /<game>/report hands each request to report. It returns the
// site's URL; everything stops at the end of the test. rewrite, if given,
// changes the requests the runtime gets further.
func pageSite(t *testing.T, root, domain, game, html string, report func(*http.Request), rewrite ...func(*httputil.ProxyRequest)) string {
	t.Helper()
	rt, err := runtime.New(runtime.Options{GamesRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	files := pages.New(pages.Options{Store: st, Loaded: rt.Loaded})
	games := httptest.NewServer(files.Route(rt))
	t.Cleanup(func() { games.Close(); rt.Shutdown(context.Background()); files.Close(); st.Close() })
	target, _ := url.Parse(games.URL)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = domain
		r.Out.Header.Set("Origin", "https://"+domain)
		for _, f := range rewrite {
			f(r)
		}
	}}
	mux := http.NewServeMux()
	mux.Handle("/"+game, proxy)
	mux.Handle("/"+game+"/hoster.client.js", proxy)
	mux.HandleFunc("/"+game+"/report", func(w http.ResponseWriter, r *http.Request) { report(r) })
	mux.HandleFunc("/"+game+"/play.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(html))
	})
	site := httptest.NewServer(mux)
	t.Cleanup(site.Close)
	return site.URL
}
