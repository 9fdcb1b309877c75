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
func Load(program *goja.Program) (*goja.Runtime, *goja.Object, error) {
	vm := goja.New()
	vm.SetMaxCallStackSize(2000)
	timer := time.AfterFunc(loadBudget, func() { vm.Interrupt("loading took longer than " + loadBudget.String()) })
	_, err := vm.RunProgram(program)
	timer.Stop()
	vm.ClearInterrupt()
	if err != nil {
		return nil, nil, err
	}
	reg, ok := vm.Get("__hoster").(*goja.Object)
	if !ok || reg == nil {
		return nil, nil, errors.New("the module defines no __hoster registry")
	}
	if f := reg.Get("format"); f == nil || f.ToInteger() != 1 {
		return nil, nil, fmt.Errorf("the registry's format is %v, not 1", f)
	}
	return vm, reg, nil
}
