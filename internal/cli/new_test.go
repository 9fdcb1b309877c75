package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/devtest"
)

// TestNewGamePlays is hoster new's promise, for each language: the new game
// generates (and type-checks, when tsc is at hand), passes its own tests
// under hoster test, and plays under hoster dev: its page is served, a
// player joins over a real socket, sends the move command and sees itself
// move in an update.
func TestNewGamePlays(t *testing.T) {
	for _, lang := range []string{"ts", "js"} {
		t.Run(lang, func(t *testing.T) {
			root := t.TempDir()
			t.Chdir(root)
			var out, errOut bytes.Buffer
			if code := Main([]string{"new", "--json", "--" + lang, "example.com/tag"}, nil, &out, &errOut); code != ExitOK {
				t.Fatalf("new: exit %d\n%s", code, errOut.String())
			}
			var rep newReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("new --json: %v\n%s", err, out.String())
			}
			want := []string{"_tests/move.test." + lang, "hoster-commands/move/args.json", "hoster-commands/move/run." + lang,
				"hoster-game.json", "hoster-instance/tick." + lang, "hoster-player/fields.json", "hoster-player/join." + lang,
				"index.html", "lib/board." + lang}
			if lang == "ts" {
				want = append(want, "tsconfig.json")
			}
			for i := range want {
				want[i] = "example.com/tag/" + want[i]
			}
			slices.Sort(want)
			if rep.Game != "example.com/tag" || rep.Language != lang || !slices.Equal(rep.Files, want) ||
				rep.URL != "http://example.com.localhost:8080/tag/" {
				t.Fatalf("report %+v\nwant files %q", rep, want)
			}
			for _, f := range rep.Files {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("reported, not written: %v", err)
				}
			}
			// Renamed into place: no temporary folder is left beside it.
			if entries, _ := os.ReadDir("example.com"); len(entries) != 1 || entries[0].Name() != "tag" {
				t.Errorf("example.com holds %v, want only tag", entries)
			}

			mustRun(t, "gen", ".")
			if tsc := os.Getenv("HOSTER_TSC"); tsc != "" {
				mustRun(t, "gen", "--check", ".")
			} else {
				t.Log("not type-checked: HOSTER_TSC is not set (make test installs typescript with npm)")
			}
			if stdout := mustRun(t, "test", "."); !strings.HasSuffix(stdout, "\n3 passed, 0 failed\n") {
				t.Fatalf("hoster test:\n%s", stdout)
			}
			playInDev(t, root)
		})
	}
}

// mustRun runs hoster with args, fails t unless it exits 0, and returns its
// stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Main(args, nil, &out, &errOut); code != ExitOK {
		t.Fatalf("hoster %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return out.String()
}

// playInDev runs hoster dev on root, fetches example.com/tag's page, and
// moves a player on its socket until an update shows it moved right.
func playInDev(t *testing.T, root string) {
	out, _ := devtest.Start(t, root)
	url := devtest.URL(t, out, "example.com/tag")
	var port int
	if _, err := fmt.Sscanf(url, "http://example.com.localhost:%d/tag/", &port); err != nil {
		t.Fatalf("hoster dev served example.com/tag at %q: %v", url, err)
	}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
	}
	origin := fmt.Sprintf("http://example.com.localhost:%d", port)

	// The page, and the library it loads.
	client := &http.Client{Transport: &http.Transport{DialContext: dial}}
	for path, want := range map[string]string{"/tag/": `<script src="hoster.client.js"></script>`, "/tag/hoster.client.js": "connect"} {
		resp, err := client.Get(origin + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %s, want a body holding %q", path, resp.Status, want)
		}
	}

	// A player from the page's origin, as the page's socket is.
	dialer := websocket.Dialer{NetDialContext: dial}
	conn, r, err := dialer.Dial(fmt.Sprintf("ws://example.com.localhost:%d/tag?name=ada", port), http.Header{"Origin": {origin}})
	if err != nil {
		t.Fatalf("joining: %v %v", err, r)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
	var welcome struct{ T, Player string }
	if err := conn.ReadJSON(&welcome); err != nil || welcome.T != "welcome" {
		t.Fatalf("welcome: %+v %v", welcome, err)
	}
	x0 := -1.0
	for x0 < 0 {
		x0 = readX(t, conn, welcome.Player)
	}
	if err := conn.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 1, "dy": 0}}); err != nil {
		t.Fatal(err)
	}
	for x := x0; x <= x0; {
		x = readX(t, conn, welcome.Player)
		if x >= 0 {
			t.Logf("the player moved from x=%v to x=%v", x0, x)
		}
	}
}

// readX reads the next message on conn and returns the player's x in it,
// or -1 when it carries none.
func readX(t *testing.T, conn *websocket.Conn, player string) float64 {
	t.Helper()
	var m struct {
		T, Error       string
		Appear, Change []struct {
			ID string
			F  map[string]any
		}
	}
	if err := conn.ReadJSON(&m); err != nil {
		t.Fatalf("reading the game socket: %v", err)
	}
	if m.T == "error" {
		t.Fatalf("the game refused: %s", m.Error)
	}
	for _, c := range append(m.Appear, m.Change...) {
		if x, ok := c.F["x"].(float64); ok && c.ID == player {
			return x
		}
	}
	return -1
}

// TestNewRefuses: a name the sites tree would not take, or a place already
// taken, is a usage error (exit 2) that writes nothing and leaves what is
// there as it was.
func TestNewRefuses(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	os.MkdirAll(filepath.Join("taken.com", "empty"), 0o755)
	os.MkdirAll(filepath.Join("taken.com", "game"), 0o755)
	os.WriteFile(filepath.Join("taken.com", "game", "index.html"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join("taken.com", "file"), []byte("mine"), 0o644)
	before := tree(t, root)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"new", "taken.com/game"}, ExitUsage, "taken.com/game: already exists"},
		{[]string{"new", "taken.com/empty"}, ExitUsage, "taken.com/empty: already exists"},
		{[]string{"new", "--js", "taken.com/file"}, ExitUsage, "taken.com/file: already exists"},
		{[]string{"new", "example/tag"}, ExitUsage, `"example" is not a domain`},
		{[]string{"new", "_x.com/tag"}, ExitUsage, `"_x.com" is not a domain`},
		{[]string{"new", "example.com/_tag"}, ExitUsage, `"_tag" is not a game name`},
		{[]string{"new", "example.com/.tag"}, ExitUsage, `".tag" is not a game name`},
		{[]string{"new", "example.com/"}, ExitUsage, `"" is not a game name`},
		{[]string{"new", "example.com"}, ExitUsage, "give the domain and the game"},
		{[]string{"new", "example.com/a/b"}, ExitUsage, "give the domain and the game"},
		{[]string{"new", "example.com/\xff"}, ExitUsage, "valid UTF-8"},
		{[]string{"new", "--ts", "--js", "example.com/tag"}, ExitUsage, "choose one"},
		{[]string{"new"}, ExitUsage, "accepts 1 arg"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(tc.args, nil, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want %d mentioning %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("%q: stdout %q", tc.args, out.String())
		}
	}
	if after := tree(t, root); !slices.Equal(after, before) {
		t.Fatalf("the tree changed:\nbefore %q\nafter  %q", before, after)
	}
}

// TestNewWritesNothingOnFailure: when the game cannot be written whole
// (here a file stands where its domain folder would go), nothing is left.
func TestNewWritesNothingOnFailure(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	os.WriteFile("blocked.com", []byte("mine"), 0o644)
	before := tree(t, root)
	var out, errOut bytes.Buffer
	if code := Main([]string{"new", "blocked.com/tag"}, nil, &out, &errOut); code != ExitFailed ||
		!strings.Contains(errOut.String(), "writing blocked.com/tag: ") {
		t.Fatalf("exit %d, %q; want 1 naming what it was writing", code, errOut.String())
	}
	if after := tree(t, root); !slices.Equal(after, before) {
		t.Fatalf("the tree changed:\nbefore %q\nafter  %q", before, after)
	}
}

// tree lists every path under root, hidden ones included.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var paths []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		return nil
	})
	return paths
}
