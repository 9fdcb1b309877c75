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
		for _, line := range strings.Split(err.Error(), "\n") {
			problems = append(problems, Problem{File: file, Msg: line})
		}
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
	d.Player = game.Fields{}
	readJSON("hoster-player/fields.json", func(b []byte) (err error) { d.Player, err = game.ParseFields(b); return })
	for _, h := range playerHooks {
		findHook("hoster-player", h, "player."+h, false)
	}

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
		readJSON("hoster-entities/"+t+"/fields.json", func(b []byte) (err error) {
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
			findHook("hoster-entities/"+t, h, fmt.Sprintf("entities[%q].%s", t, h), false)
		}
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
	}
	sort.Strings(d.Sources)
	return d, problems
}
