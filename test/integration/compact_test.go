package integration

import (
	"encoding/json"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/internal/socktest"
	"github.com/hoster-dev/hoster/pkg/compact"
	"github.com/hoster-dev/hoster/pkg/gen"
)

// TestCompactProtocolInChromium: a page with two connections of the browser
// library, one on the compact protocol and one on JSON, knows the same on
// both after every update at the same time (pkg/compact/testdata/
// twoviewers: every kind of field and change). It logs the library's cost
// per update on each, measured in the page (not asserted).
func TestCompactProtocolInChromium(t *testing.T) {
	root, testdata := twoViewersGame(t)
	script, err := os.ReadFile(filepath.Join(testdata, "twoviewers.js"))
	if err != nil {
		t.Fatal(err)
	}
	page := `<!doctype html><title>two viewers</title>
<script src="hoster.client.js"></script>
<script>` + string(script) + `
twoViewers(Hoster, undefined, WebSocket, 8, (r) => fetch("report", { method: "POST", body: JSON.stringify(r) }));
</script>`
	report := firstReport(t, root, "two.example", "two", page, "its comparison")
	socktest.TwoViewers(t, report, "Chromium (decoding and applying, about 55 changes)")
}

// TestCompactFallbackInChromium: a server that does not take the compact
// protocol (here a proxy drops the request for it, so the runtime answers
// with no subprotocol, which fails Chromium's handshake) still serves the
// browser library: it asks again at once for none and plays in JSON. The
// page counts the mobs (50, for the instance's life), not the entities: a
// gem lives half of every 20 ticks.
func TestCompactFallbackInChromium(t *testing.T) {
	root, _ := twoViewersGame(t)
	page := `<!doctype html><title>fallback</title>
<script src="hoster.client.js"></script>
<script>
  const asked = [];
  class Recorder extends WebSocket { constructor(u, p) { super(u, p); asked.push(p || ""); } }
  const g = Hoster.connect({}, { WebSocket: Recorder });
  let sent = false;
  g.on("change", (t) => {
    if (sent || t.type !== "mob") return;
    sent = true;
    fetch("report", { method: "POST", body: JSON.stringify({ asked, mobs: Object.values(g.entities).filter((e) => e.type === "mob").length }) });
  });
</script>`
	b := firstReport(t, root, "two.example", "two", page, "a mob moving",
		func(r *httputil.ProxyRequest) { r.Out.Header.Del("Sec-WebSocket-Protocol") })
	var r struct {
		Asked []string
		Mobs  int
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("the report %q: %v", b, err)
	}
	if strings.Join(r.Asked, ",") != compact.Protocol+"," || r.Mobs != 50 {
		t.Fatalf("sockets asked for %q and the page knows %d mobs; want the compact protocol, then none, and 50", r.Asked, r.Mobs)
	}
}

// twoViewersGame generates pkg/compact/testdata/twoviewers's game as
// two.example/two under a new games root; it returns the root and the
// testdata folder. It skips the test without Chromium, before any work.
func twoViewersGame(t *testing.T) (root, testdata string) {
	t.Helper()
	skipWithoutChromium(t)
	testdata = filepath.Join(repoRoot(t), "pkg", "compact", "testdata", "twoviewers")
	root = filepath.Join(t.TempDir(), "games")
	if err := os.CopyFS(filepath.Join(root, "two.example", "two"), os.DirFS(filepath.Join(testdata, "game"))); err != nil {
		t.Fatal(err)
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	return root, testdata
}
