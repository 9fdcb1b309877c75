package gen

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
)

// definition is a game's folders, read and validated.
type definition struct {
	Config   game.Config
	Hooks    []hook // every hook file, in registry order
	Player   game.Fields
	Entities map[string]game.Fields // by type
	Commands map[string]game.Args   // by name
	Sources  []string               // every definition file read, relative to the game
	// stateFrom is hoster-instance/create.ts when there is one: its
	// declared return type types instance.state.
	stateFrom string
}

// hook is one hook file and where it goes in the registry.
type hook struct {
	File string // relative to the game folder, e.g. hoster-instance/tick.ts
	Path string // registry path, e.g. instance.tick or commands["move"].run
}

var (
	instanceHooks = []string{"create", "tick", "serialise", "restore"}
	playerHooks   = []string{"join", "leave", "disconnect", "reconnect", "visible"}
	entityHooks   = []string{"tick"}
)

// load reads and validates a game folder, reporting every problem.
func load(dir string) (*definition, []Problem) {
	d := &definition{Entities: map[string]game.Fields{}, Commands: map[string]game.Args{}}
	var problems []Problem
	add := func(file string, err error) {
		for _, e := range game.Split(err) {
			if pe := (*game.PosError)(nil); errors.As(e, &pe) {
				problems = append(problems, Problem{File: file, Line: pe.Line, Col: pe.Col, Msg: pe.Msg})
				continue
			}
			for _, line := range strings.Split(e.Error(), "\n") {
				problems = append(problems, Problem{File: file, Msg: line})
			}
		}
	}
	// known checks that a definition folder holds only what it may: a file
	// that is not one of its hooks or schemas is a mistake (a misspelt hook
	// would otherwise be silently left out), named with the nearest name.
	known := func(folder string, hooks []string, schema string) {
		problems = append(problems, strangers(dir, folder, hooks, schema)...)
	}

	if b, err := os.ReadFile(filepath.Join(dir, api.GameConfigFile)); err != nil {
		add(api.GameConfigFile, err)
	} else if d.Config, err = game.ParseConfig(b); err != nil {
		add(api.GameConfigFile, err)
	}
	d.Sources = append(d.Sources, api.GameConfigFile)

	// findHook looks for <base>.js or <base>.ts in folder; required hooks
	// that are absent are reported.
	findHook := func(folder, base, path string, required bool) {
		var found []string
		for _, ext := range []string{".js", ".ts"} {
			if exists(filepath.Join(dir, folder, base+ext)) {
				found = append(found, folder+"/"+base+ext)
			}
		}
		switch len(found) {
		case 0:
			if required {
				problems = append(problems, Problem{File: folder, Msg: fmt.Sprintf("no %s.js (or %s.ts): a command needs a handler", base, base)})
			}
		case 1:
			d.Hooks = append(d.Hooks, hook{File: found[0], Path: path})
			d.Sources = append(d.Sources, found[0])
		default:
			problems = append(problems, Problem{File: found[1], Msg: fmt.Sprintf("both %s and %s define the %s hook; keep one", found[0], found[1], base)})
		}
	}
	readJSON := func(file string, parse func([]byte) error) {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		d.Sources = append(d.Sources, file)
		if err == nil {
			err = parse(b)
		}
		if err != nil {
			add(file, err)
		}
	}

	for _, h := range instanceHooks {
		findHook("hoster-instance", h, "instance."+h, false)
	}
	known("hoster-instance", instanceHooks, "")
	for _, h := range d.Hooks {
		if h.File == "hoster-instance/create.ts" {
			d.stateFrom = h.File
		}
	}
	d.Player = game.Fields{}
	readJSON("hoster-player/fields.json", func(b []byte) (err error) { d.Player, err = game.ParseFields(b); return })
	for _, h := range playerHooks {
		findHook("hoster-player", h, "player."+h, false)
	}
	known("hoster-player", playerHooks, "fields.json")

	types, err := subdirs(filepath.Join(dir, "hoster-entities"))
	if err != nil {
		add("hoster-entities", err)
	}
	for _, t := range types {
		if t == "player" {
			problems = append(problems, Problem{File: "hoster-entities/player", Msg: `"player" is the type of players; name the entity type otherwise`})
			continue
		}
		fields := game.Fields{}
		folder := "hoster-entities/" + t
		if !exists(filepath.Join(dir, folder, "fields.json")) {
			problems = append(problems, Problem{File: folder, Msg: `no fields.json: an entity type needs one, listing what viewers see ({} for nothing)`})
		}
		readJSON(folder+"/fields.json", func(b []byte) (err error) {
			if fields, err = game.ParseFields(b); err != nil {
				return err
			}
			var errs []error
			for _, name := range slices.Sorted(maps.Keys(fields)) {
				if fields[name].Private {
					errs = append(errs, fmt.Errorf("field %q: only a player's fields can be private (an entity belongs to no player)", name))
				}
			}
			return errors.Join(errs...)
		})
		d.Entities[t] = fields
		for _, h := range entityHooks {
			findHook(folder, h, fmt.Sprintf("entities[%q].%s", t, h), false)
		}
		known(folder, entityHooks, "fields.json")
	}

	names, err := subdirs(filepath.Join(dir, "hoster-commands"))
	if err != nil {
		add("hoster-commands", err)
	}
	for _, n := range names {
		args := game.Args{}
		readJSON("hoster-commands/"+n+"/args.json", func(b []byte) (err error) { args, err = game.ParseArgs(b); return })
		d.Commands[n] = args
		findHook("hoster-commands/"+n, "run", fmt.Sprintf("commands[%q].run", n), true)
		known("hoster-commands/"+n, []string{"run"}, "args.json")
	}
	problems = append(problems, strangers(dir, "hoster-entities", nil, "")...)
	problems = append(problems, strangers(dir, "hoster-commands", nil, "")...)
	sort.Strings(d.Sources)
	return d, problems
}

// strangers reports each entry of a definition folder that is not one of its
// hooks (<name>.js or .ts) or its schema file. hoster-entities and
// hoster-commands (hooks nil) hold only folders, one per type or command.
// Hidden and reserved (_) names are the author's own.
func strangers(dir, folder string, hooks []string, schema string) []Problem {
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(folder)))
	if err != nil {
		return nil
	}
	holdsFolders := hooks == nil && schema == ""
	var allowed []string
	for _, h := range hooks {
		allowed = append(allowed, h+".js", h+".ts")
	}
	if schema != "" {
		allowed = append(allowed, schema)
	}
	var problems []Problem
	for _, e := range entries {
		name := e.Name()
		if game.IsSkipped(name) || game.IsReserved(name) || slices.Contains(allowed, name) || holdsFolders && e.IsDir() {
			continue
		}
		var msg string
		switch {
		case holdsFolders:
			msg = fmt.Sprintf("%s holds one folder per %s; a loose file here is not read", folder, map[string]string{"hoster-entities": "entity type", "hoster-commands": "command"}[folder])
		case e.IsDir():
			msg = fmt.Sprintf("%s holds hook files only; put helpers outside the definition folders and import them", folder)
		default:
			msg = fmt.Sprintf("not a hook of %s", folder)
			if n := game.Nearest(name, allowed); n != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", n)
			}
			msg += ": it holds " + strings.Join(hooks, ", ") + " (.js or .ts)"
			if schema != "" {
				msg += " and " + schema
			}
			msg += "; helpers belong outside the definition folders"
		}
		problems = append(problems, Problem{File: folder + "/" + name, Msg: msg})
	}
	return problems
}
