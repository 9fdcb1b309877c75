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
)

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
