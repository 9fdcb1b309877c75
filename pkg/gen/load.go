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
	l := &loader{dir: dir, d: &definition{Entities: map[string]game.Fields{}, Commands: map[string]game.Args{}}}
	l.config()
	l.instance()
	l.player()
	l.entities()
	l.commands()
	l.problems = append(l.problems, strangers(dir, game.EntitiesFolder, nil, "")...)
	l.problems = append(l.problems, strangers(dir, game.CommandsFolder, nil, "")...)
	sort.Strings(l.d.Sources)
	return l.d, l.problems
}

// loader is one load: the game folder, the definition read from it so far,
// and every problem found.
type loader struct {
	dir      string
	d        *definition
	problems []Problem
}

// add reports err, one problem for each of its parts, about file.
func (l *loader) add(file string, err error) {
	for _, e := range game.Split(err) {
		if pe := (*game.PosError)(nil); errors.As(e, &pe) {
			l.problems = append(l.problems, Problem{File: file, Line: pe.Line, Col: pe.Col, Msg: pe.Msg})
			continue
		}
		for _, line := range strings.Split(e.Error(), "\n") {
			l.problems = append(l.problems, Problem{File: file, Msg: line})
		}
	}
}

// known checks that a definition folder holds only what it may: a file
// that is not one of its hooks or schemas is a mistake (a misspelt hook
// would otherwise be silently left out), named with the nearest name.
func (l *loader) known(folder string, hooks []string, schema string) {
	l.problems = append(l.problems, strangers(l.dir, folder, hooks, schema)...)
}

// findHook looks for <base>.js or <base>.ts in folder; required hooks
// that are absent are reported.
func (l *loader) findHook(folder, base, path string, required bool) {
	var found []string
	for _, ext := range []string{".js", ".ts"} {
		if exists(filepath.Join(l.dir, folder, base+ext)) {
			found = append(found, folder+"/"+base+ext)
		}
	}
	switch len(found) {
	case 0:
		if required {
			l.problems = append(l.problems, Problem{File: folder, Msg: fmt.Sprintf("no %s.js (or %s.ts): a command needs a handler", base, base)})
		}
	case 1:
		l.d.Hooks = append(l.d.Hooks, hook{File: found[0], Path: path})
		l.d.Sources = append(l.d.Sources, found[0])
	default:
		l.problems = append(l.problems, Problem{File: found[1], Msg: fmt.Sprintf("both %s and %s define the %s hook; keep one", found[0], found[1], base)})
	}
}

// readJSON parses file with parse, where it exists.
func (l *loader) readJSON(file string, parse func([]byte) error) {
	b, err := os.ReadFile(filepath.Join(l.dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	l.d.Sources = append(l.d.Sources, file)
	if err == nil {
		err = parse(b)
	}
	if err != nil {
		l.add(file, err)
	}
}

// config reads the game's config file.
func (l *loader) config() {
	b, err := os.ReadFile(filepath.Join(l.dir, api.GameConfigFile))
	if err == nil {
		l.d.Config, err = game.ParseConfig(b)
	}
	if err != nil {
		l.add(api.GameConfigFile, err)
	}
	l.d.Sources = append(l.d.Sources, api.GameConfigFile)
}

// instance finds the instance's hooks.
func (l *loader) instance() {
	for _, h := range instanceHooks {
		l.findHook(game.InstanceFolder, h, "instance."+h, false)
	}
	l.known(game.InstanceFolder, instanceHooks, "")
	for _, h := range l.d.Hooks {
		if h.File == game.InstanceFolder+"/create.ts" {
			l.d.stateFrom = h.File
		}
	}
}

// player reads the player's fields and finds its hooks.
func (l *loader) player() {
	l.d.Player = game.Fields{}
	l.readJSON(game.PlayerFolder+"/"+game.FieldsFile, func(b []byte) (err error) { l.d.Player, err = game.ParseFields(b); return })
	for _, h := range playerHooks {
		l.findHook(game.PlayerFolder, h, "player."+h, false)
	}
	l.known(game.PlayerFolder, playerHooks, game.FieldsFile)
}

// entities reads each entity type's fields and finds its hooks.
func (l *loader) entities() {
	types, err := subdirs(filepath.Join(l.dir, game.EntitiesFolder))
	if err != nil {
		l.add(game.EntitiesFolder, err)
	}
	for _, t := range types {
		if t == "player" {
			l.problems = append(l.problems, Problem{File: game.EntitiesFolder + "/player", Msg: `"player" is the type of players; name the entity type otherwise`})
			continue
		}
		fields := game.Fields{}
		folder := game.EntitiesFolder + "/" + t
		if !exists(filepath.Join(l.dir, folder, game.FieldsFile)) {
			l.problems = append(l.problems, Problem{File: folder, Msg: `no fields.json: an entity type needs one, listing what viewers see ({} for nothing)`})
		}
		l.readJSON(folder+"/"+game.FieldsFile, func(b []byte) (err error) {
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
		l.d.Entities[t] = fields
		for _, h := range entityHooks {
			l.findHook(folder, h, fmt.Sprintf("entities[%q].%s", t, h), false)
		}
		l.known(folder, entityHooks, game.FieldsFile)
	}
}

// commands reads each command's arguments and finds its handler.
func (l *loader) commands() {
	names, err := subdirs(filepath.Join(l.dir, game.CommandsFolder))
	if err != nil {
		l.add(game.CommandsFolder, err)
	}
	for _, n := range names {
		args := game.Args{}
		l.readJSON(game.CommandsFolder+"/"+n+"/"+game.ArgsFile, func(b []byte) (err error) { args, err = game.ParseArgs(b); return })
		l.d.Commands[n] = args
		l.findHook(game.CommandsFolder+"/"+n, "run", fmt.Sprintf("commands[%q].run", n), true)
		l.known(game.CommandsFolder+"/"+n, []string{"run"}, game.ArgsFile)
	}
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
			msg = fmt.Sprintf("%s holds one folder per %s; a loose file here is not read", folder, map[string]string{game.EntitiesFolder: "entity type", game.CommandsFolder: "command"}[folder])
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
