package integration

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// fence is a package a program must not link, or may link only through the
// packages named in through, and why.
type fence struct {
	pkg     string // a package, or a module's path; its subpackages are fenced too
	why     string
	through []string // the only packages that may import it; none: it is never linked
}

const mod = "github.com/hoster-dev/hoster/"

// fences are each program's forbidden imports.
var fences = map[string][]fence{
	"./cmd/hoster-server": {
		{pkg: "github.com/go-resty/resty/v2", why: "the server answers HTTP with net/http; resty is the client's, in pkg/apiclient"},
		{pkg: mod + "pkg/apiclient", why: "the client side of the contract; the server shares only pkg/api with it"},
		{pkg: "github.com/evanw/esbuild/pkg/api", why: "games are bundled where they are written (hoster gen); the server loads the bundle with pkg/module"},
		{pkg: mod + "pkg/gen", why: "the generator, with esbuild, runs on the developer's machine"},
		{pkg: mod + "pkg/mirror", why: "the client's walk, plan, sync, pull and watch"},
		{pkg: "github.com/vbauerster/mpb/v8", why: "progress bars are the client's terminal output"},
		{pkg: "github.com/fsnotify/fsnotify", why: "the server reloads on the Sync API's writes, not by watching files"},
		{pkg: mod + "internal/cli", why: "the hoster command line"},
		{pkg: mod + "pkg/dev", why: "hoster dev's private server and its playground, which shows every instance's state: never the public server's"},
	},
	"./cmd/hoster": {
		{pkg: mod + "pkg/hostserver", why: "a server's parts, wired: in hoster only for hoster dev's private server",
			through: []string{mod + "pkg/dev"}},
		{pkg: mod + "pkg/server", why: "the Sync API's server side: in hoster only for hoster dev's private server",
			through: []string{mod + "pkg/hostserver"}},
		{pkg: mod + "pkg/store", why: "the server's games mirror on disk: in hoster only for hoster dev's private server",
			through: []string{mod + "pkg/hostserver", mod + "pkg/server", mod + "pkg/pages"}},
		{pkg: mod + "pkg/pages", why: "the server's page serving: in hoster only for hoster dev's private server",
			through: []string{mod + "pkg/hostserver"}},
		{pkg: mod + "pkg/worker", why: "the worker processes of serve --isolation process: hoster dev runs its games in process"},
		{pkg: mod + "pkg/tools", why: "the server's tools API"},
		{pkg: mod + "pkg/health", why: "the server's health sampler"},
		{pkg: "github.com/shirou/gopsutil/v4", why: "host metrics are the server's"},
		{pkg: "gopkg.in/natefinch/lumberjack.v2", why: "the server's log rotation"},
		{pkg: mod + "internal/servercmd", why: "the hoster-server command line"},
		{pkg: mod + "pkg/fleet", why: "a fleet of servers is the server's; the client talks HTTP to any node"},
		{pkg: "github.com/nats-io/nats-server/v2", why: "the fleet's embedded NATS is the server's"},
		{pkg: "github.com/nats-io/nats.go", why: "the fleet's NATS client is the server's"},
		{pkg: "github.com/dop251/goja", why: "JavaScript runs in hoster only to prove a generated module loads (gen) and to play games locally (hoster dev, hoster test)",
			through: []string{mod + "pkg/gen", mod + "pkg/module", mod + "pkg/runtime", mod + "pkg/gametest"}},
		{pkg: mod + "pkg/runtime", why: "the game runtime serves games in hoster only for hoster dev and hoster test",
			through: []string{mod + "pkg/dev", mod + "pkg/hostserver", mod + "pkg/gametest"}},
		{pkg: "github.com/gorilla/websocket", why: "game sockets are the runtime's (hoster dev)",
			through: []string{mod + "pkg/runtime"}},
	},
}

// TestDependencyFences keeps each program from linking what it must not
// (tailscale's deptest is the model). A fence naming a package that no longer
// exists fails too, so a rename cannot quietly open it.
func TestDependencyFences(t *testing.T) {
	root := repoRoot(t)
	var named []string
	for _, fs := range fences {
		for _, f := range fs {
			named = append(named, f.pkg)
		}
	}
	for _, p := range named {
		pkg := exec.Command("go", "list", p)
		pkg.Dir = root
		module := exec.Command("go", "list", "-m", p)
		module.Dir = root
		if pkg.Run() != nil && module.Run() != nil {
			t.Errorf("the dependency fence names %s, which is neither a package nor a module of the build: rename or drop it", p)
		}
	}
	for cmd, fs := range fences {
		// Each linked package with the packages it imports.
		list := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", cmd)
		list.Dir = root
		out, err := list.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", cmd, err)
		}
		for line := range strings.Lines(string(out)) {
			fields := strings.Fields(line)
			importer, imports := fields[0], fields[1:]
			for _, f := range fs {
				if within(importer, f.pkg) {
					continue // the fenced package's own imports
				}
				for _, dep := range imports {
					if within(dep, f.pkg) && !slices.Contains(f.through, importer) {
						t.Errorf("%s links %s through %s: %s", cmd, dep, importer, f.why)
					}
				}
			}
		}
	}
}

func within(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// bottom are the packages at the foot of pkg/: each may import, of the
// module's packages, only those listed with it (each also at the bottom), so
// that the contract and the rules every side shares never pull in a side.
var bottom = map[string]struct {
	why     string
	imports []string
}{
	"pkg/api":        {why: "the contract both sides import: what crosses the wire, its routes and names"},
	"pkg/compact":    {why: "the game socket's compact encoding, part of the wire contract"},
	"pkg/game":       {why: "the rules of a game folder and its schemas, shared by gen, the runtime and sync"},
	"pkg/layout":     {why: "the contract's layout on disk, which every side calls", imports: []string{"pkg/api", "pkg/game"}},
	"pkg/atomicfile": {why: "a file written whole or not at all, under gen, init, pull and the store"},
	"pkg/filehash":   {why: "the sha256 both ends of a sync compute"},
	"pkg/clientip":   {why: "a request's client address, for the runtime and the access log"},
	"pkg/module":     {why: "loading a generated module in goja, for gen and the runtime"},
	"pkg/transfer":   {why: "the values pkg/mirror and pkg/apiclient pass each other, so mirror names them without linking the HTTP client"},
}

// TestLayerFences keeps the layers of the module apart, whatever program
// links them: no package under pkg/ imports one under internal/ (internal/
// is the programs' own: their commands, and the tests' helpers, which only
// _test files may use), and the bottom packages import only what bottom
// lists for each. A bottom entry naming no package fails too.
func TestLayerFences(t *testing.T) {
	root := repoRoot(t)
	list := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./pkg/...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list ./pkg/...: %v", err)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, imports := strings.TrimPrefix(fields[0], mod), fields[1:]
		seen[pkg] = true
		for _, dep := range imports {
			if !strings.HasPrefix(dep, mod) {
				continue
			}
			dep = strings.TrimPrefix(dep, mod)
			if within(dep, "internal") {
				t.Errorf("%s imports %s: a pkg/ package imports nothing of internal/, which is the programs' own (pass what it needs in, or move the package to pkg/)", pkg, dep)
			}
			if b, ok := bottom[pkg]; ok && !slices.Contains(b.imports, dep) {
				t.Errorf("%s imports %s: %s is at the bottom (%s) and imports only %v", pkg, dep, pkg, b.why, b.imports)
			}
		}
	}
	for pkg := range bottom {
		if !seen[pkg] {
			t.Errorf("the layer fence names %s, which is not a package of pkg/: rename or drop it", pkg)
		}
	}
}
