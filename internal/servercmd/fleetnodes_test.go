package servercmd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/internal/cli"
	"github.com/hoster-dev/hoster/internal/fleettest"
	"github.com/hoster-dev/hoster/pkg/api"
)

// fleetToken is the API token every node of a test fleet has.
var fleetToken = strings.Repeat("ab", 32)

// fleetNode is one hoster-server serve process of a test fleet (this test
// program, see TestMain), started by fleettest: the sync tests run its
// games in process (startFleet), the rooms tests in workers
// (startRoomFleet).
type fleetNode struct{ *fleettest.Node }

// startFleet starts n nodes of an embedded fleet that run their games in
// process, each with a hosting root of its own holding the same token, and
// waits until each serves.
func startFleet(t *testing.T, n, variant int) []*fleetNode {
	t.Helper()
	root := func() string {
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, api.TokenFile), []byte(fleetToken), 0o600); err != nil {
			t.Fatal(err)
		}
		return root
	}
	return fleetNodes(fleettest.Start(t, n, os.Args[0], root, "--isolation", "none", "--variant", fmt.Sprint(variant),
		"--reload-debounce", "50ms", "--gamelog-interval", "1h"))
}

// startRoomFleet starts n nodes that run their games in workers, each with
// the example arena in its own hosting root, and waits until each serves
// its games.
func startRoomFleet(t *testing.T, n int) []*fleetNode {
	t.Helper()
	return fleetNodes(fleettest.Start(t, n, os.Args[0], func() string { return exampleGames(t, "example.com") }))
}

func fleetNodes(nodes []*fleettest.Node) []*fleetNode {
	var out []*fleetNode
	for _, nd := range nodes {
		out = append(out, &fleetNode{nd})
	}
	return out
}

// until waits until cond holds, checking it again whenever the node logs a
// line (writing a synced game and reloading it both do).
func (nd *fleetNode) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !nd.Out.Until(func(string) bool { return cond() }, 60*time.Second) { // a hang guard
		t.Fatalf("%s never got %s", nd.Name, what)
	}
}

// url is the node's base URL.
func (nd *fleetNode) url() string { return "http://" + nd.Listen }

// diskTree is every file under the node's games root with its sha256.
func (nd *fleetNode) diskTree(t *testing.T) map[string]string {
	t.Helper()
	return filesTree(t, filepath.Join(nd.Root, api.GamesDir))
}

// filesTree is every regular file under dir with its sha256, but
// in-flight temporaries (dot names).
func filesTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		tree[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	return tree
}

// apiTree is the node's GET /api/tree, nil when it does not answer.
func (nd *fleetNode) apiTree() map[string]string {
	req, _ := http.NewRequest("GET", nd.url()+api.PathTree, nil)
	req.Header.Set("Authorization", "Bearer "+fleetToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var tree map[string]string
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&tree) != nil {
		return nil
	}
	return tree
}

// page is the body of a GET of the arena's path on the node ("" when not
// 200).
func (nd *fleetNode) page(path string) string {
	req, _ := http.NewRequest("GET", nd.url()+"/arena/"+path, nil)
	req.Host = "example.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return ""
	}
	return string(b)
}

// tickRate is the tick rate the node's arena welcomes a player with: which
// version of the game's code and settings it runs (0: none).
func (nd *fleetNode) tickRate() int {
	h := http.Header{"Host": {"example.com"}, "Origin": {"https://example.com"}}
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+nd.Listen+"/arena", h)
	if err != nil {
		return 0
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var welcome struct{ TickRate int }
	if ws.ReadJSON(&welcome) != nil {
		return 0
	}
	return welcome.TickRate
}

// hosterSync runs hoster sync of sites against server, as the hoster
// program does, and returns its exit status and its output.
func hosterSync(t *testing.T, server, sites string) (int, string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(fleetToken), 0o600)
	var out bytes.Buffer
	code := cli.Main([]string{"sync", "--server", server, "--token-file", tokenFile, sites}, strings.NewReader(""), &out, &out)
	return code, out.String()
}

// arenaSites copies the example arena to a new sites folder, with n extra
// files of its own under assets/, and returns the folder.
func arenaSites(t *testing.T, n int) string {
	t.Helper()
	sites := t.TempDir()
	arena := filepath.Join(sites, "example.com", "arena")
	if err := os.CopyFS(arena, os.DirFS("../../examples/sites/example.com/arena")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		writeSite(t, arena, fmt.Sprintf("assets/f%03d.txt", i), strings.Repeat(fmt.Sprintf("file %d ", i), 500))
	}
	return sites
}

func writeSite(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameTree reports whether a and b hold the same files and hashes.
func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// gate is a proxy in front of a node that lets a sync's first batch
// through and holds the rest until opened: a test acts in the middle of
// the sync. A node gone behind it aborts the client's connections, as the
// node's own death would.
type gate struct {
	URL     string
	first   chan struct{} // closed once the first batch was answered
	open    chan struct{}
	batches atomic.Int32
	once    sync.Once
}

func newGate(t *testing.T, nd *fleetNode) *gate {
	t.Helper()
	g := &gate{first: make(chan struct{}), open: make(chan struct{})}
	target, _ := url.Parse(nd.url())
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || r.URL.Path != api.PathFiles {
			proxy.ServeHTTP(w, r)
			return
		}
		if g.batches.Add(1) > 1 {
			<-g.open
			proxy.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
		g.once.Do(func() { close(g.first) })
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.release)
	g.URL = srv.URL
	return g
}

// waitFirst waits until the sync's first batch was answered.
func (g *gate) waitFirst(t *testing.T) {
	t.Helper()
	select {
	case <-g.first:
	case <-time.After(60 * time.Second): // a hang guard
		t.Fatal("the sync's first batch never went through")
	}
}

// release lets the held batches go on.
func (g *gate) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// syncing runs hosterSync in the background; its exit status and output
// come on the channel.
func syncing(t *testing.T, server, sites string) <-chan [2]string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(fleetToken), 0o600)
	done := make(chan [2]string, 1)
	go func() {
		var out bytes.Buffer
		code := cli.Main([]string{"sync", "--server", server, "--token-file", tokenFile, sites}, strings.NewReader(""), &out, &out)
		done <- [2]string{fmt.Sprint(code), out.String()}
	}()
	return done
}
