package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/internal/waitbuf"
	"github.com/hoster-dev/hoster/pkg/api"
)

const testToken = "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface"

type cliEnv struct {
	t     *testing.T
	dir   string // working directory with hoster.json
	sites string
	games string
	url   string
	srv   *contracttest.Env // the server, from the harness
	puts  atomic.Int32
	dels  atomic.Int32
	// failPut, when set, makes the server answer a PUT of that path, or a
	// batch holding it, with 500.
	failPut atomic.Pointer[func(path string) bool]
	// before, when set, sees each request before the server does.
	before atomic.Pointer[func(r *http.Request)]
}

// newCLIEnv starts a real server and writes a config file for it.
func newCLIEnv(t *testing.T, variant api.Variant) *cliEnv {
	e := &cliEnv{t: t, dir: t.TempDir()}
	e.sites = filepath.Join(e.dir, "sites")
	s := contracttest.Start(t, contracttest.Options{Variant: variant, Token: testToken, Wrap: e.watch})
	e.srv, e.games, e.url = s, s.GamesRoot, s.URL
	e.writeConfig(map[string]string{"hoster-config-server": s.URL, "hoster-config-apiToken": testToken})
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(e.dir, "xdg"))
	t.Setenv("HOSTER_CONFIG_SERVER", "")
	t.Setenv("HOSTER_CONFIG_APITOKEN", "")
	t.Setenv("HOSTER_CONFIG_CERTSHA256", "")
	return e
}

// watch serves h counting uploads and deletes, and failing the uploads
// failPut names.
func (e *cliEnv) watch(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before := e.before.Load(); before != nil {
			(*before)(r)
		}
		switch {
		case r.Method == "PUT" && r.URL.Path == api.PathFiles:
			// A batch: count its files, and fail it whole if one is to fail.
			body, _ := io.ReadAll(r.Body)
			failed := false
			for tr := tar.NewReader(bytes.NewReader(body)); ; {
				h, err := tr.Next()
				if err != nil {
					break
				}
				e.puts.Add(1)
				failed = failed || e.failing(h.Name)
			}
			if failed {
				e.diskOnFire(w)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		case r.Method == "PUT":
			e.puts.Add(1)
			if e.failing(r.URL.Query().Get(api.QueryPath)) {
				e.diskOnFire(w)
				return
			}
		case r.Method == "DELETE":
			e.dels.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

func (e *cliEnv) failing(path string) bool {
	fail := e.failPut.Load()
	return fail != nil && (*fail)(path)
}

func (e *cliEnv) diskOnFire(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	io.WriteString(w, `{"error": "disk on fire"}`)
}

func (e *cliEnv) writeConfig(m map[string]string) {
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(e.dir, "hoster.json"), b, 0o600)
}

func (e *cliEnv) game(name string, files map[string]string) {
	dir := filepath.Join(e.sites, "example.com", name)
	files["hoster-game.json"] = `{"tickRate": 20, "sendRate": 10, "capacity": 4, "origins": ["*"]}`
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
}

// run runs hoster in e.dir and returns stdout, stderr and the exit status.
func (e *cliEnv) run(tty bool, args ...string) (string, string, int) {
	e.t.Helper()
	e.t.Chdir(e.dir)
	var out, errOut bytes.Buffer
	code := run(&IO{Out: &out, ErrOut: &errOut, ErrIsTerminal: tty}, args)
	if strings.Contains(out.String()+errOut.String(), testToken) {
		e.t.Fatalf("hoster %v printed the token", args)
	}
	return out.String(), errOut.String(), code
}

func TestSyncOutputModes(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"index.html": "<p>hi</p>", "hoster-commands/go/run.js": "export default function () {}"})

	// Pipe: one line per action on stderr, nothing on stdout.
	out, errOut, code := e.run(false, "sync", "sites")
	if code != 0 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"uploaded example.com/arena/index.html (9 B)", "uploaded example.com/arena/hoster.server.js", "uploaded example.com/arena/tsconfig.json", "synced sites: 8 uploaded"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// A second sync changes nothing: no PUT, no DELETE.
	e.puts.Store(0)
	out, errOut, code = e.run(false, "--json", "sync", "sites")
	var rep struct {
		Uploaded, Deleted, Unchanged int
		Bytes                        int64
		Failures                     []any
		Elapsed                      float64
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("--json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if rep.Uploaded != 0 || rep.Unchanged != 8 || rep.Failures == nil || e.puts.Load() != 0 || e.dels.Load() != 0 {
		t.Fatalf("no-op sync: %+v, %d PUTs", rep, e.puts.Load())
	}
	// Quiet prints nothing on success.
	os.WriteFile(filepath.Join(e.sites, "example.com/arena/index.html"), []byte("changed"), 0o644)
	out, errOut, code = e.run(false, "-q", "sync", "sites")
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("-q: exit %d %q %q", code, out, errOut)
	}
	// A terminal gets a bar (which mpb draws only on a real terminal), not
	// a line per action, and the summary.
	os.WriteFile(filepath.Join(e.sites, "example.com/arena/index.html"), []byte("again"), 0o644)
	_, errOut, code = e.run(true, "sync", "sites")
	if code != 0 || strings.Contains(errOut, "uploaded example.com") || !strings.Contains(errOut, "synced sites: 1 uploaded") {
		t.Fatalf("terminal: exit %d:\n%s", code, errOut)
	}
}

func TestSyncDryRun(t *testing.T) {
	e := newCLIEnv(t, api.Variant2)
	e.game("arena", map[string]string{"a.txt": "a"})
	os.MkdirAll(filepath.Join(e.games, "example.com/arena"), 0o755)
	os.WriteFile(filepath.Join(e.games, "example.com/arena/old.txt"), []byte("o"), 0o644)
	out, errOut, code := e.run(false, "sync", "--dry-run", "sites")
	if code != 0 || e.puts.Load() != 0 || e.dels.Load() != 0 {
		t.Fatalf("dry run: exit %d, %d puts\n%s", code, e.puts.Load(), errOut)
	}
	if !strings.Contains(out, "upload example.com/arena/a.txt 1\n") || !strings.Contains(out, "delete example.com/arena/old.txt\n") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("dry run plan:\n%s\n%s", out, errOut)
	}
	planned := strings.Count(out, "\n")
	_, _, code = e.run(false, "sync", "sites")
	if code != 0 || int(e.puts.Load())+int(e.dels.Load()) != planned {
		t.Fatalf("the real run did %d+%d, the plan said %d", e.puts.Load(), e.dels.Load(), planned)
	}
}

func TestSyncFailures(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"hoster-instance/tick.js": "export default function (i, dt) { ( }"})
	_, errOut, code := e.run(false, "sync", "sites")
	if code != ExitFailed || e.puts.Load() != 0 || !strings.Contains(errOut, "tick.js:1:") ||
		!strings.Contains(errOut, "generating failed for example.com/arena, so the server keeps its last good version") {
		t.Fatalf("gen failure: exit %d, %d puts\n%s", code, e.puts.Load(), errOut)
	}

	// A wrong token: the 404 is explained.
	e.game("arena", map[string]string{"hoster-instance/tick.js": "export default function (i, dt) {}"})
	e.writeConfig(map[string]string{"hoster-config-server": e.url, "hoster-config-apiToken": strings.Repeat("0", 64)})
	_, errOut, code = e.run(false, "sync", "sites")
	if code != ExitFailed || !strings.Contains(errOut, "token may be wrong") {
		t.Fatalf("wrong token: exit %d\n%s", code, errOut)
	}

	// The empty-root rail is a usage error that names --allow-empty.
	e.writeConfig(map[string]string{"hoster-config-server": e.url, "hoster-config-apiToken": testToken})
	os.MkdirAll(filepath.Join(e.games, "a.com/g"), 0o755)
	os.WriteFile(filepath.Join(e.games, "a.com/g/x"), []byte("x"), 0o644)
	empty := filepath.Join(e.dir, "empty")
	os.Mkdir(empty, 0o755)
	_, errOut, code = e.run(false, "sync", empty)
	if code != ExitUsage || !strings.Contains(errOut, "--allow-empty") {
		t.Fatalf("empty root: exit %d\n%s", code, errOut)
	}
}

// A game that fails to generate does not stop the sync: the other games
// are pushed, the broken one keeps its server files exactly (no upload, no
// delete), and the run exits 1 naming it.
func TestSyncBrokenGameAmongGoodOnes(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"index.html": "v1", "old.txt": "o"})
	e.game("maze", map[string]string{"index.html": "m1"})
	if _, errOut, code := e.run(false, "sync", "sites"); code != 0 {
		t.Fatalf("first sync: exit %d\n%s", code, errOut)
	}
	before := map[string]string{}
	filepath.WalkDir(filepath.Join(e.games, "example.com/arena"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			before[p] = string(b)
		}
		return nil
	})
	// arena breaks (and changes and loses a file); maze changes.
	e.game("arena", map[string]string{"index.html": "v2", "hoster-instance/tick.js": "export default function (i, dt) { ( }"})
	os.Remove(filepath.Join(e.sites, "example.com/arena/old.txt"))
	e.game("maze", map[string]string{"index.html": "m2"})
	e.puts.Store(0)
	_, errOut, code := e.run(false, "sync", "sites")
	if code != ExitFailed || !strings.Contains(errOut, "generating failed for example.com/arena") || strings.Contains(errOut, "maze") && !strings.Contains(errOut, "uploaded example.com/maze/index.html") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(e.games, "example.com/maze/index.html")); string(b) != "m2" || e.dels.Load() != 0 {
		t.Fatalf("the good game was not pushed: %q, %d deletes\n%s", b, e.dels.Load(), errOut)
	}
	after := 0
	filepath.WalkDir(filepath.Join(e.games, "example.com/arena"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			after++
			if b, _ := os.ReadFile(p); before[p] != string(b) {
				t.Errorf("%s changed on the server: %q", p, b)
			}
		}
		return nil
	})
	if after != len(before) {
		t.Errorf("the broken game had %d server files, now %d", len(before), after)
	}
}

// The version check and the tree request go out together: the server
// here answers the version only once the tree has been asked for, which a
// sync that waited for the version before asking would never do.
func TestSyncAsksVersionAndTreeAtOnce(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"index.html": "a"})
	treeAsked := make(chan struct{})
	var once sync.Once
	before := func(r *http.Request) {
		switch r.URL.Path {
		case api.PathTree:
			once.Do(func() { close(treeAsked) })
		case api.PathVersion:
			select {
			case <-treeAsked:
			case <-time.After(10 * time.Second): // a bound, not a pause: the sync is wrong
				t.Error("the version check waited for the tree request, or the other way round")
			}
		}
	}
	e.before.Store(&before)
	if _, errOut, code := e.run(false, "sync", "sites"); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}

// A failed upload is printed once, naming its path once.
func TestSyncFailurePrintedOnce(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"index.html": strings.Repeat("x", 2<<20)}) // big: alone in its batch
	fail := func(path string) bool { return path == "example.com/arena/index.html" }
	e.failPut.Store(&fail)
	_, errOut, code := e.run(false, "sync", "sites")
	if code != ExitFailed {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if n := strings.Count(errOut, "failed: upload example.com/arena/index.html"); n != 1 {
		t.Errorf("the failure is printed %d times:\n%s", n, errOut)
	}
	// Up to the server's own message (its wording is the server's), the
	// client names the path once.
	line := errOut[strings.Index(errOut, "failed: upload example.com/arena/index.html"):]
	line = line[:strings.Index(line, "\n")]
	for _, server := range []string{"server answered", "the server could not write it"} {
		if i := strings.Index(line, server); i > 0 {
			line = line[:i]
		}
	}
	if n := strings.Count(line, "example.com/arena/index.html"); n != 1 {
		t.Errorf("the path is named %d times: %s", n, line)
	}
}

func TestConfiguration(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{})

	// No server anywhere: exit 2.
	os.Remove(filepath.Join(e.dir, "hoster.json"))
	if _, errOut, code := e.run(false, "sync", "sites"); code != ExitUsage || !strings.Contains(errOut, "no server configured") {
		t.Fatalf("no server: %d %s", code, errOut)
	}
	// Server but no token: exit 2.
	if _, errOut, code := e.run(false, "--server", e.url, "sync", "sites"); code != ExitUsage || !strings.Contains(errOut, "no API token") {
		t.Fatalf("no token: %d %s", code, errOut)
	}
	// The environment gives the token; the flag --token-file wins over it.
	t.Setenv("HOSTER_CONFIG_APITOKEN", "wrong-"+testToken[6:])
	tokFile := filepath.Join(e.dir, "token")
	os.WriteFile(tokFile, []byte(testToken+"\n"), 0o600)
	if _, errOut, code := e.run(false, "--server", e.url, "--token-file", tokFile, "sync", "sites"); code != 0 {
		t.Fatalf("flag over env: %d %s", code, errOut)
	}
	// The environment wins over the file.
	t.Setenv("HOSTER_CONFIG_APITOKEN", testToken)
	e.writeConfig(map[string]string{"hoster-config-server": e.url, "hoster-config-apiToken": "file-token-is-wrong"})
	if _, errOut, code := e.run(false, "sync", "sites"); code != 0 {
		t.Fatalf("env over file: %d %s", code, errOut)
	}
	// $XDG_CONFIG_HOME/hoster/hoster.json is read when ./hoster.json is absent.
	t.Setenv("HOSTER_CONFIG_APITOKEN", "")
	os.Remove(filepath.Join(e.dir, "hoster.json"))
	xdg := filepath.Join(e.dir, "xdg", "hoster")
	os.MkdirAll(xdg, 0o755)
	b, _ := json.Marshal(map[string]string{"hoster-config-server": e.url, "hoster-config-apiToken": testToken})
	os.WriteFile(filepath.Join(xdg, "hoster.json"), b, 0o600)
	if _, errOut, code := e.run(false, "sync", "sites"); code != 0 {
		t.Fatalf("xdg config: %d %s", code, errOut)
	}
	// A malformed or unknown-keyed config file is exit 2 naming the file, not its content.
	os.WriteFile(filepath.Join(e.dir, "hoster.json"), []byte(`{"hoster-config-apiToken": "`+testToken+`",`), 0o600)
	if _, errOut, code := e.run(false, "sync", "sites"); code != ExitUsage || !strings.Contains(errOut, "hoster.json") {
		t.Fatalf("malformed config: %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(e.dir, "hoster.json"), []byte(`{"hoster-config-sever": "x"}`), 0o600)
	if _, errOut, code := e.run(false, "sync", "sites"); code != ExitUsage || !strings.Contains(errOut, `unknown key "hoster-config-sever"`) {
		t.Fatalf("unknown key: %d %s", code, errOut)
	}
	// Keys match exactly: a wrongly cased one is unknown, names the right
	// spelling, and its value is not used (viper alone would take it).
	os.WriteFile(filepath.Join(e.dir, "hoster.json"), []byte(`{"hoster-config-server": "`+e.url+`", "hoster-config-apitoken": "`+testToken+`"}`), 0o600)
	if _, errOut, code := e.run(false, "sync", "sites"); code != ExitUsage ||
		!strings.Contains(errOut, `unknown key "hoster-config-apitoken" (did you mean "hoster-config-apiToken"?)`) {
		t.Fatalf("wrongly cased key: %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(e.dir, "hoster.json"), []byte(`{"hoster-config-server": 5}`), 0o600)
	if _, errOut, code := e.run(false, "sync", "sites"); code != ExitUsage || !strings.Contains(errOut, "hoster-config-server must be a string") {
		t.Fatalf("a number for the server: %d %s", code, errOut)
	}
	if _, _, code := e.run(false, "sync", "--jobs", "0", "sites"); code != ExitUsage {
		t.Fatalf("--jobs 0: %d", code)
	}
}

func TestVersion(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	out, errOut, code := e.run(false, "version")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("api %d", api.Version)) || !strings.Contains(out, "server "+e.url+" api 1") {
		t.Fatalf("version: %d\n%s%s", code, out, errOut)
	}
	out, _, code = e.run(false, "--json", "version")
	var v struct{ API, ServerAPI int }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.API != api.Version || v.ServerAPI != 1 {
		t.Fatalf("version --json: %d %s", code, out)
	}
	for _, tc := range []struct {
		serverAPI int
		want      string
	}{{api.Version + 1, "upgrade hoster\n"}, {api.Version - 1, "upgrade hoster-server"}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"api": %d}`, tc.serverAPI)
		}))
		e.writeConfig(map[string]string{"hoster-config-server": srv.URL, "hoster-config-apiToken": testToken})
		_, errOut, code := e.run(false, "version")
		if code != ExitVersion || !strings.Contains(errOut, tc.want) {
			t.Errorf("server api %d: exit %d\n%s", tc.serverAPI, code, errOut)
		}
		// Every other command refuses too.
		e.game("arena", map[string]string{})
		if _, _, code := e.run(false, "sync", "sites"); code != ExitVersion {
			t.Errorf("sync against api %d: exit %d, want 3", tc.serverAPI, code)
		}
		srv.Close()
	}
}

func TestSyncWatch(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"a.txt": "one"})
	t.Chdir(e.dir)
	ctx, cancel := context.WithCancel(context.Background())
	errOut := waitbuf.New()
	done := make(chan error, 1)
	go func() {
		done <- watchSync(ctx, &IO{Out: io.Discard, ErrOut: errOut}, &globals{}, "sites", syncOptions{Jobs: 2})
	}()
	server := filepath.Join(e.games, "example.com/arena/a.txt")
	synced := func(rounds int, want string) {
		t.Helper()
		if !errOut.WaitFor("uploaded example.com/arena/a.txt", rounds, 20*time.Second) || !errOut.WaitFor("synced sites:", rounds, 20*time.Second) {
			t.Fatalf("sync round %d never ended:\n%s", rounds, errOut)
		}
		if b, _ := os.ReadFile(server); string(b) != want {
			t.Fatalf("the server has %q, want %q\n%s", b, want, errOut)
		}
	}
	synced(1, "one")
	if !errOut.WaitFor("watching sites for changes", 1, 20*time.Second) {
		t.Fatalf("never watching:\n%s", errOut)
	}
	os.WriteFile(filepath.Join(e.sites, "example.com/arena/a.txt"), []byte("two"), 0o644)
	synced(2, "two")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSyncSkipsNameNotUTF8: a local name that is not UTF-8 is named as
// skipped and the run exits 1; everything else is pushed.
func TestSyncSkipsNameNotUTF8(t *testing.T) {
	e := newCLIEnv(t, api.Variant1)
	e.game("arena", map[string]string{"ok.txt": "ok", "bad\xff.txt": "bad"})
	_, errOut, code := e.run(false, "sync", "sites")
	if code != ExitFailed || !strings.Contains(errOut, `failed: skip example.com/arena/bad\xff.txt: the name is not valid UTF-8`) ||
		!strings.Contains(errOut, "1 local name skipped (not UTF-8, or with a control character)") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(e.games, "example.com/arena/ok.txt")); err != nil {
		t.Fatal("the rest was not pushed")
	}
}
