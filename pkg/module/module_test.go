package module

import (
	"errors"
	"strings"
	"testing"

	"github.com/dop251/goja"
)

func load(t *testing.T, src string) (*goja.Runtime, *goja.Object, error) {
	t.Helper()
	p, err := goja.Compile("hoster.server.js", src, false)
	if err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

func TestLoadAcceptsARegistryOfFormat1(t *testing.T) {
	vm, reg, err := load(t, `var __hoster = { format: 1, hooks: { tick: function () { return 7; } } };`)
	if err != nil {
		t.Fatal(err)
	}
	tick, ok := goja.AssertFunction(reg.Get("hooks").ToObject(vm).Get("tick"))
	if !ok {
		t.Fatal("the registry's hook is not a function")
	}
	if v, err := tick(goja.Undefined()); err != nil || v.ToInteger() != 7 {
		t.Fatalf("calling a hook of the loaded module: %v %v", v, err)
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"throws", `throw new Error("boom");`, "boom"},
		{"no registry", `var x = 1;`, "no __hoster registry"},
		{"a registry that is not an object", `var __hoster = 1;`, "no __hoster registry"},
		{"no format", `var __hoster = {};`, "not 1"},
		{"another format", `var __hoster = { format: 2 };`, "format is 2, not 1"},
		{"runs past the budget", `for (;;) {}`, "loading took longer than " + loadBudget.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm, reg, err := load(t, tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tc.want)
			}
			if vm != nil || reg != nil {
				t.Fatal("a refused module must return no runtime")
			}
		})
	}
	// The call stack is bounded: runaway recursion ends as an error.
	_, _, err := load(t, `function f(n) { return f(n + 1) + 1; } f(0);`)
	var so *goja.StackOverflowError
	if !errors.As(err, &so) {
		t.Fatalf("runaway recursion: %v, want a stack overflow", err)
	}
}
