// Package module loads a generated hoster.server.js into a goja runtime and
// checks that it defines the registry of docs/module-format.md. The
// generator uses it to prove a module runs before writing it; the runtime
// uses it to accept a pushed game. It depends on goja alone, so the server
// does not link the bundler.
package module

import (
	"errors"
	"fmt"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Compile compiles a hoster.server.js named name. sourceMap is its source
// map (hoster.server.js.map), or nil: with it, stack positions name the
// author's files and lines. Nothing else is ever read: goja's own loader
// would read the map's path from the process's working directory.
func Compile(name string, src, sourceMap []byte) (*goja.Program, error) {
	mapName := name + ".map"
	ast, err := goja.Parse(name, string(src), parser.WithSourceMapLoader(func(path string) ([]byte, error) {
		if path != mapName || sourceMap == nil {
			return nil, errors.New("no source map")
		}
		return sourceMap, nil
	}))
	if err != nil {
		return nil, err
	}
	return goja.CompileAST(ast, false)
}

// loadBudget bounds how long loading a module may run.
const loadBudget = 2 * time.Second

// Load runs a hoster.server.js in a fresh goja runtime and returns the
// runtime and its registry object. It fails if the script throws, runs past
// a short budget, or defines no registry of format 1.
func Load(program *goja.Program) (vm *goja.Runtime, reg *goja.Object, err error) {
	r := goja.New()
	timer := time.AfterFunc(loadBudget, func() { r.Interrupt("loading took longer than " + loadBudget.String()) })
	defer func() {
		timer.Stop()
		r.ClearInterrupt()
		// A module's code runs when its registry is read (a getter, a
		// proxy) and throws through Go as a panic.
		if p := recover(); p != nil {
			vm, reg, err = nil, nil, fmt.Errorf("reading the registry: %v", p)
		}
	}()
	reg, err = LoadInto(r, program)
	if err != nil {
		return nil, nil, err
	}
	return r, reg, nil
}

// LoadInto runs a hoster.server.js in vm and returns its registry object,
// checked as Load does. The caller bounds its time, and recovers: reading
// the registry may run the module's code (a getter, a proxy), which throws
// through Go as a panic.
func LoadInto(vm *goja.Runtime, program *goja.Program) (*goja.Object, error) {
	vm.SetMaxCallStackSize(2000)
	if _, err := vm.RunProgram(program); err != nil {
		return nil, err
	}
	reg, ok := vm.Get("__hoster").(*goja.Object)
	if !ok || reg == nil {
		return nil, errors.New("the module defines no __hoster registry")
	}
	// The format is read as data: a number primitive, never converted (a
	// valueOf would run the module's code).
	switch f := reg.Get("format"); {
	case f == nil || !goja.IsNumber(f):
		return nil, errors.New("the registry's format is not a number, not 1")
	case f.ToFloat() != 1:
		return nil, fmt.Errorf("the registry's format is %v, not 1", f.ToFloat())
	}
	return reg, nil
}
