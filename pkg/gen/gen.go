// Package gen turns a game's definition folders into the two static files
// the rest of hoster uses: hoster.server.js, one plain script that goja runs
// on the server (hook files bundled by esbuild, exposing the registry of
// docs/module-format.md), and hoster.client.js, the game's browser library,
// with hoster.client.d.ts typing it. Both are written from plain files,
// js/client.js and js/client.d.ts, with the game's schema filled in; the
// library's unit tests, js/client.test.js, run in Node.
//
// Everything is validated before anything is written, and every problem is
// reported at once, with its file and line where there is one. A game with
// problems gets no files; the others are still generated. Output is
// deterministic, and a file is rewritten only when its bytes change, so an
// unchanged game is never uploaded again by a sync.
package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// The generated files.
const (
	ServerFile = api.ServerModule    // hoster.server.js
	ClientFile = api.ClientLibrary   // hoster.client.js
	TypesFile  = api.ClientTypes     // hoster.client.d.ts
	MapFile    = api.ServerModuleMap // hoster.server.js.map: never served
)

// Problem is one thing wrong with a game.
type Problem struct {
	// File is relative to the generated ROOT, slash-separated.
	File string `json:"file"`
	// Line is 1-based, or 0 when the problem has no line.
	Line int `json:"line,omitempty"`
	// Col is the 1-based column on Line, or 0 when only the line is known.
	Col int `json:"column,omitempty"`
	// Msg says what is wrong.
	Msg string `json:"message"`
}

func (p Problem) String() string {
	if p.Line > 0 && p.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
	}
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// GameResult is what happened to one game.
type GameResult struct {
	// Dir is "<domain>/<game>".
	Dir string `json:"game"`
	// Written lists the generated files whose bytes changed (and were
	// therefore written), relative to ROOT.
	Written []string `json:"written"`
	// Hooks, Commands and EntityTypes count what the game defines.
	Hooks       int `json:"hooks"`
	Commands    int `json:"commands"`
	EntityTypes int `json:"entityTypes"`
	// Private lists the game's own files, outside the definition folders,
	// that went into hoster.server.js and that the server therefore never
	// serves (relative to the game folder, sorted).
	Private []string `json:"private"`
	// Public lists those that hoster-game.json's public setting gives to the
	// page as well: served, though bundled.
	Public []string `json:"public"`
	// Problems is empty when the game was generated.
	Problems []Problem `json:"problems"`
}

// Summary is one line saying what was generated and which of the game's
// files the server keeps private as server code: "example.com/arena: 11
// hooks, 2 commands, 1 entity type; private: lib/rounds.ts; public:
// lib/shared.js".
func (g GameResult) Summary() string {
	n := func(k int, one, many string) string {
		if k == 1 {
			return fmt.Sprintf("%d %s", k, one)
		}
		return fmt.Sprintf("%d %s", k, many)
	}
	line := fmt.Sprintf("%s: %s, %s, %s", g.Dir, n(g.Hooks, "hook", "hooks"),
		n(g.Commands, "command", "commands"), n(g.EntityTypes, "entity type", "entity types"))
	if len(g.Private) > 0 {
		line += "; private: " + names(g.Private)
	}
	if len(g.Public) > 0 {
		line += "; public: " + names(g.Public)
	}
	return line
}

// names lists a few names, and how many more there are.
func names(list []string) string {
	const shown = 4
	if len(list) <= shown {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:shown], ", "), len(list)-shown)
}

// Result is what Generate did, one entry per game in path order.
type Result struct {
	Games []GameResult
}

// Failed reports whether any game has problems.
func (r Result) Failed() bool {
	for _, g := range r.Games {
		if len(g.Problems) > 0 {
			return true
		}
	}
	return false
}

// Broken lists the games with problems ("<domain>/<game>"): a sync leaves
// them as they are on the server, running their last good version.
func (r Result) Broken() []string {
	var out []string
	for _, g := range r.Games {
		if len(g.Problems) > 0 {
			out = append(out, g.Dir)
		}
	}
	return out
}

// Problems returns every problem of every game.
func (r Result) Problems() []Problem {
	var all []Problem
	for _, g := range r.Games {
		all = append(all, g.Problems...)
	}
	return all
}

// Generate generates every game under root, found by the contract's
// structure rules (pkg/layout's Games): <root>/<domain>/<game>/ holding
// hoster-game.json, a regular file (not a symbolic link, which a sync never
// sends). The error is only for trouble reading root itself; each game's
// problems are in the Result. Its files record the release "dev": a
// program stamps its own with GenerateWith.
func Generate(root string) (Result, error) { return GenerateWith(root, Options{}) }

// Options change what GenerateWith does.
type Options struct {
	// Check, when set, type-checks each game whose definition is valid
	// (gen --check). It runs after the game's hoster-env.d.ts and
	// tsconfig.json are written, which it checks against, and before the
	// game's generated files are: a game it reports problems in is not
	// generated, its hoster.server.js, map, hoster.client.js and
	// hoster.client.d.ts left exactly as they were. root is absolute; dir
	// is "<domain>/<game>". Its error, for a checker that could not run,
	// is a problem of the game too.
	Check func(root, dir string) ([]Problem, error)
	// Release is the hoster release that every generated file's header
	// records: the calling program's own (internal/version's Release, "dev"
	// for a development build, so that each commit does not rewrite every
	// generated file). Empty records "dev".
	Release string
}

// GenerateWith is Generate with options.
func GenerateWith(root string, o Options) (Result, error) {
	if o.Release == "" {
		o.Release = "dev"
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return Result{}, fmt.Errorf("reading %s: %w", root, err)
	}
	dirs, err := layout.Games(root)
	if err != nil {
		return Result{}, err
	}
	var res Result
	for _, dir := range dirs {
		res.Games = append(res.Games, generateGame(root, dir, o))
	}
	return res, nil
}

func generateGame(root, dir string, o Options) GameResult {
	res := GameResult{Dir: dir, Written: []string{}, Private: []string{}, Public: []string{}, Problems: []Problem{}}
	abs := filepath.Join(root, filepath.FromSlash(dir))
	def, problems := load(abs)
	res.Hooks, res.Commands, res.EntityTypes = len(def.Hooks), len(def.Commands), len(def.Entities)
	// Each step runs only when every step before it found nothing; the
	// places of problems are relative to the game until the end.
	var server, sourceMap []byte
	if len(problems) == 0 {
		server, sourceMap, problems = bundle(abs, def, o.Release)
	}
	if len(problems) == 0 {
		problems = check(server, sourceMap, def)
	}
	if len(problems) == 0 {
		res.Private, res.Public = keptPrivate(abs, server, sourceMap, def.Config)
	}
	write := func(files map[string][]byte, names ...string) {
		for _, name := range names {
			if files[name] == nil {
				continue
			}
			changed, err := writeIfChanged(filepath.Join(abs, name), files[name])
			if err != nil {
				problems = append(problems, Problem{File: name, Msg: err.Error()})
			} else if changed {
				res.Written = append(res.Written, dir+"/"+name)
			}
		}
	}
	if len(problems) == 0 {
		// The hooks' types first: the type check reads them.
		env := map[string][]byte{EnvFile: envTypes(dir, def, o.Release)}
		if !exists(filepath.Join(abs, TSConfigFile)) {
			env[TSConfigFile] = []byte(tsconfig)
		}
		write(env, EnvFile, TSConfigFile)
	}
	var typeErrors []Problem
	if len(problems) == 0 && o.Check != nil {
		var err error
		if typeErrors, err = o.Check(root, dir); err != nil {
			typeErrors = append(typeErrors, Problem{File: dir, Msg: "type-checking: " + err.Error()})
		}
	}
	if len(problems) == 0 && len(typeErrors) == 0 {
		write(map[string][]byte{
			ServerFile: server,
			MapFile:    sourceMap,
			ClientFile: clientLibrary(dir, def, o.Release),
			TypesFile:  clientTypes(dir, def, o.Release),
		}, ServerFile, MapFile, ClientFile, TypesFile)
	}
	for _, p := range problems {
		p.File = dir + "/" + p.File
		res.Problems = append(res.Problems, p)
	}
	// The checker places its problems under root already.
	res.Problems = append(res.Problems, typeErrors...)
	return res
}

// keptPrivate splits the game's own files that went into the server module
// (those outside the definition folders) into the ones the server keeps
// private and the ones cfg's public setting serves as well, as the server
// will from the pushed map.
func keptPrivate(abs string, server, sourceMap []byte, cfg game.Config) (private, public []string) {
	private, public = []string{}, []string{}
	for _, f := range game.ServerSources(server, sourceMap) {
		top, _, _ := strings.Cut(f, "/")
		if game.IsDefinitionFolder(top) || !exists(filepath.Join(abs, filepath.FromSlash(f))) {
			continue
		}
		if cfg.MadePublic(f) {
			public = append(public, f)
		} else {
			private = append(private, f)
		}
	}
	return private, public
}

// writeIfChanged writes data to path atomically unless it already holds
// exactly data, and reports whether it wrote.
func writeIfChanged(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := atomicfile.WriteFileUnsynced(path, data, 0o644); err != nil {
		return false, err
	}
	return true, nil
}

// exists reports whether a regular file is at path.
func exists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// subdirs lists the directory names in dir that are not hidden or reserved.
func subdirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !game.IsSkipped(e.Name()) && !game.IsReserved(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// jsIdent reports whether s is usable as a plain JavaScript identifier.
func jsIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return !strings.Contains(" break case catch class const continue debugger default delete do else export extends finally for function if import in instanceof new return super switch this throw try typeof var void while with yield let static enum await implements package protected interface private public null true false ", " "+s+" ")
}
