package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/layout"
	"github.com/hoster-dev/hoster/pkg/module"
)

// Game is one game, from its first load until its folder is removed: its
// identity and live instances stay while its code is swapped as a version.
// A *Game a socket looked up before a reload stays valid after it: what it
// places, it places on the current version.
type Game struct {
	Domain, Name string

	cur atomic.Pointer[version] // the code new instances start on

	mu        sync.Mutex // guards instances, removed, loadErr and starting; see Runtime.mu for the lock order
	instances map[string]*Instance
	removed   bool  // the folder is gone: no new instance
	loadErr   error // why the newest files did not load; nil once they did
	// starting holds, for each room a join is taking a new instance for
	// (place; "": a public one), what closes once it has: the room's
	// other joins wait for it.
	starting map[string]chan struct{}

	// The allowance of hook error and instance.log lines: see logAllowed.
	logTokens  float64
	logLast    time.Time
	logDropped int

	errs []HookError // the most recent, for Overview; guarded by mu
}

// version is one load of a game's folder: its configuration, its compiled
// module (shared by all its instances) and its command schemas, and the
// files it was loaded from. A version never changes once loaded.
type version struct {
	cfg      game.Config
	program  *goja.Program
	commands map[string]game.Args
	src      Source
	schema   *schema // the players' and entities' fields
	// mathUnbound is whether the module never binds the name Math (see
	// purehook.go), found once, when a visibility hook first asks.
	mathUnbound func() bool
}

// Source is the files one version of a game was loaded from. A game's
// worker process is given its parent's (Runtime.Source, Runtime.Install)
// instead of reading the game's folder, so that the two always run the
// same version: the last one that loaded, whatever the folder holds now.
type Source struct {
	// ID names the version: the start of a SHA-256 of its files, as the
	// log's "game loaded" lines give it.
	ID     string `json:"id"`
	Config []byte `json:"config"`        // hoster-game.json
	Module []byte `json:"module"`        // hoster.server.js
	Map    []byte `json:"map,omitempty"` // hoster.server.js.map, when there is one
}

// current is the game's current version.
func (g *Game) current() *version { return g.cur.Load() }

// Key is "<domain>/<game>".
func (g *Game) Key() string { return g.Domain + "/" + g.Name }

// readSource reads a game folder's files: hoster-game.json, the generated
// hoster.server.js and its map, when there is one.
func readSource(dir string) (Source, error) {
	if !layout.IsGame(dir) { // as hoster gen and sync: a link is no game's
		return Source{}, fmt.Errorf("reading %s: not a regular file", api.GameConfigFile)
	}
	var src Source
	var err error
	if src.Config, err = os.ReadFile(filepath.Join(dir, api.GameConfigFile)); err != nil {
		return Source{}, fmt.Errorf("reading %s: %w", api.GameConfigFile, err)
	}
	if src.Module, err = os.ReadFile(filepath.Join(dir, api.ServerModule)); err != nil {
		return Source{}, fmt.Errorf("reading %s (run hoster gen): %w", api.ServerModule, err)
	}
	// The map is optional: without it, errors name hoster.server.js lines.
	if src.Map, err = os.ReadFile(filepath.Join(dir, api.ServerModuleMap)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Source{}, fmt.Errorf("reading %s.map: %w", api.ServerModule, err)
	}
	h := sha256.New()
	for _, b := range [][]byte{src.Config, src.Module, src.Map} {
		binary.Write(h, binary.BigEndian, int64(len(b)))
		h.Write(b)
	}
	src.ID = hex.EncodeToString(h.Sum(nil))[:12]
	return src, nil
}

// loadVersion checks a game's files: a valid hoster-game.json and a
// generated hoster.server.js that compiles, loads and exposes a registry.
// Running the module, and reading its registry, is under budget of CPU time,
// as a hook is.
func loadVersion(src Source, budget time.Duration, sw stuckWatch) (*version, error) {
	cfg, err := game.ParseConfig(src.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", api.GameConfigFile, err)
	}
	program, err := module.Compile(api.ServerModule, src.Module, src.Map)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", api.ServerModule, err)
	}
	reg, err := readRegistry(program, budget, sw)
	if err != nil {
		return nil, err
	}
	sch, err := newSchema(reg.Fields)
	if err != nil {
		return nil, err
	}
	g := &version{cfg: cfg, program: program, commands: map[string]game.Args{}, src: src, schema: sch,
		mathUnbound: sync.OnceValue(func() bool { return mathUnbound(src.Module) })}
	for n, a := range reg.Commands {
		args, err := game.ParseArgs(a)
		if err != nil {
			return nil, fmt.Errorf("command %s: %w", n, err)
		}
		g.commands[n] = args
	}
	return g, nil
}

// registryScript lists the commands' argument schemas and the players' and
// entities' fields, as JSON, with the intrinsics taken before the module
// ran (see intrinsics.js).
const registryScript = `(function () {
	var c = {}, ents = {};
	var cmds = __hoster.commands || {};
	var names = __js.keys(cmds);
	for (var i = 0; i < names.length; i++) {
		var n = names[i];
		if (typeof cmds[n].run !== "function") throw new Error("command " + n + " has no run function");
		c[n] = cmds[n].args || {};
	}
	if (!__hoster.player || !__hoster.player.fields || !__hoster.entities || !__hoster.instance) throw new Error("the registry is incomplete");
	var types = __js.keys(__hoster.entities);
	for (var j = 0; j < types.length; j++) ents[types[j]] = __hoster.entities[types[j]].fields || {};
	return __js.stringify({ commands: c, fields: { player: __hoster.player.fields, entities: ents } });
})()`

// registry is what registryScript lists.
type registry struct {
	Commands map[string]json.RawMessage `json:"commands"`
	Fields   registryFields             `json:"fields"`
}

// readRegistry runs the module in a fresh runtime, under budget, and reads
// its commands' argument schemas and its fields.
func readRegistry(program *goja.Program, budget time.Duration, sw stuckWatch) (registry, error) {
	r := goja.New()
	list, err := guarded(r, budget, sw, "loading "+api.ServerModule, func() (json.RawMessage, error) {
		if _, err := r.RunProgram(intrinsics); err != nil {
			return nil, err
		}
		if _, err := module.LoadInto(r, program); err != nil {
			return nil, err
		}
		v, err := r.RunString(registryScript)
		if err != nil {
			return nil, err
		}
		return asJSON(v)
	})
	if err != nil {
		return registry{}, err
	}
	var reg registry
	if err := json.Unmarshal(list, &reg); err != nil {
		return registry{}, fmt.Errorf("reading the registry: %w", err)
	}
	return reg, nil
}
