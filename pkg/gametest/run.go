package gametest

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dop251/goja"
	esbuild "github.com/evanw/esbuild/pkg/api"
)

// Folder is where a game keeps its tests; as a reserved name it is never
// pushed.
const Folder = "_tests"

// testBudget bounds one test's own JavaScript, so a test that loops forever
// fails instead of hanging the run.
const testBudget = 30 * time.Second

//go:embed prelude.js
var preludeSrc string

// Result is the outcome of one test.
type Result struct {
	// File is the test file, relative to the root, slash-separated.
	File string `json:"file"`
	// Name is the test's name.
	Name string `json:"name"`
	// Passed reports whether the test passed.
	Passed bool `json:"passed"`
	// Failure says why it did not; Where is the test file's file:line:col
	// it failed at, when known.
	Failure string `json:"failure,omitempty"`
	Where   string `json:"where,omitempty"`
	// Elapsed is the real time the test took.
	Elapsed time.Duration `json:"elapsed"`
}

// Summary is every result of a run.
type Summary struct {
	Results []Result `json:"results"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
}

func (s *Summary) add(r Result) {
	s.Results = append(s.Results, r)
	if r.Passed {
		s.Passed++
	} else {
		s.Failed++
	}
}

// Files lists a game's test files, _tests/*.test.js and *.test.ts, sorted.
func Files(gameDir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(gameDir, Folder))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", Folder, err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && (strings.HasSuffix(n, ".test.js") || strings.HasSuffix(n, ".test.ts")) {
			files = append(files, filepath.Join(gameDir, Folder, n))
		}
	}
	slices.Sort(files)
	return files, nil
}

// RunGame runs every test file of the game "<domain>/<game>" under root,
// each test on a fresh instance from newGame, printing a line per test to w.
func RunGame(root, game string, newGame Factory, w io.Writer) (Summary, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return Summary{}, err
	}
	dir := filepath.Join(root, filepath.FromSlash(game))
	files, err := Files(dir)
	if err != nil {
		return Summary{}, fmt.Errorf("%s: %w", game, err)
	}
	var sum Summary
	for _, f := range files {
		runFile(root, dir, f, newGame, w, &sum)
	}
	return sum, nil
}

// runFile bundles one test file, registers its tests and runs them.
func runFile(root, dir, file string, newGame Factory, w io.Writer, sum *Summary) {
	rel := filepath.ToSlash(strings.TrimPrefix(file, root+string(filepath.Separator)))
	fail := func(name, msg, where string) {
		r := Result{File: rel, Name: name, Failure: msg, Where: where}
		sum.add(r)
		report(w, r)
	}
	program, where, err := bundle(root, file)
	if err != nil {
		fail("(loading the file)", err.Error(), where)
		return
	}
	vm := goja.New()
	vm.SetMaxCallStackSize(2000)
	vm.SetFieldNameMapper(goja.UncapFieldNameMapper())
	type test struct {
		name string
		fn   goja.Callable
	}
	var tests []test
	vm.Set("test", func(name string, fn goja.Callable) {
		tests = append(tests, test{name, fn})
	})
	if _, err := vm.RunString(preludeSrc); err != nil {
		fail("(loading the file)", "the test prelude failed: "+err.Error(), "")
		return
	}
	if err := budgeted(vm, func() error { _, err := vm.RunProgram(program); return err }); err != nil {
		msg, at := describe(root, err)
		fail("(loading the file)", msg, at)
		return
	}
	if len(tests) == 0 {
		fail("(no tests)", "the file registers no test: call test(name, fn)", rel)
		return
	}
	for _, t := range tests {
		start := time.Now()
		r := Result{File: rel, Name: t.name}
		g, err := newGame(dir)
		if err != nil {
			r.Failure = "starting the game: " + err.Error()
		} else {
			vm.Set("game", bindGame(vm, g))
			err = budgeted(vm, func() error { _, err := t.fn(goja.Undefined()); return err })
			g.Close()
			if err != nil {
				r.Failure, r.Where = describe(root, err)
			} else {
				r.Passed = true
			}
		}
		r.Elapsed = time.Since(start)
		sum.add(r)
		report(w, r)
	}
}

// report prints one result the way Go's and Node's runners do.
func report(w io.Writer, r Result) {
	if r.Passed {
		fmt.Fprintf(w, "ok   %s: %s (%.2fs)\n", r.File, r.Name, r.Elapsed.Seconds())
		return
	}
	fmt.Fprintf(w, "FAIL %s: %s (%.2fs)\n", r.File, r.Name, r.Elapsed.Seconds())
	where := r.Where
	if where == "" {
		where = r.File
	}
	for _, line := range strings.Split(r.Failure, "\n") {
		fmt.Fprintf(w, "     %s: %s\n", where, line)
		where = strings.Repeat(" ", len(where))
	}
}

// bundle turns a test file and what it imports into one script goja runs,
// with an inline source map so that stacks name the test's own lines.
func bundle(root, file string) (*goja.Program, string, error) {
	out := esbuild.Build(esbuild.BuildOptions{
		EntryPoints:   []string{file},
		AbsWorkingDir: root,
		Outfile:       filepath.Join(root, "hoster-test.js"),
		Bundle:        true,
		Write:         false,
		Format:        esbuild.FormatIIFE,
		Platform:      esbuild.PlatformNeutral,
		Target:        esbuild.ES2015,
		Sourcemap:     esbuild.SourceMapInline,
		Charset:       esbuild.CharsetUTF8,
		LogLevel:      esbuild.LogLevelSilent,
	})
	if len(out.Errors) > 0 {
		m := out.Errors[0]
		where := ""
		if m.Location != nil {
			where = fmt.Sprintf("%s:%d:%d", m.Location.File, m.Location.Line, m.Location.Column+1)
		}
		return nil, where, errors.New(m.Text)
	}
	if len(out.OutputFiles) == 0 {
		return nil, "", errors.New("bundling produced no output")
	}
	p, err := goja.Compile(filepath.Join(root, "hoster-test.js"), string(out.OutputFiles[0].Contents), false)
	if err != nil {
		return nil, "", fmt.Errorf("compiling: %w", err)
	}
	return p, "", nil
}

// budgeted runs f, interrupting the runtime if its JavaScript runs past the
// test budget.
func budgeted(vm *goja.Runtime, f func() error) error {
	timer := time.AfterFunc(testBudget, func() { vm.Interrupt(fmt.Sprintf("the test ran longer than %s", testBudget)) })
	defer func() { timer.Stop(); vm.ClearInterrupt() }()
	return f()
}

// describe turns what a test threw into a message and the place in the
// test's own source it came from: the first stack frame outside the
// prelude.
func describe(root string, err error) (msg, where string) {
	var ex *goja.Exception
	var in *goja.InterruptedError
	switch {
	case errors.As(err, &in):
		msg = fmt.Sprint(in.Value())
		for _, line := range strings.Split(in.String(), "\n") {
			if strings.Contains(line, root) {
				where = placeIn(root, line)
				break
			}
		}
		return msg, where
	case errors.As(err, &ex):
		msg = ex.Value().String()
		if o, ok := ex.Value().(*goja.Object); ok {
			if m := o.Get("message"); m != nil && !goja.IsUndefined(m) {
				msg = m.String()
				if n := o.Get("name"); n != nil && n.String() != "Error" && n.String() != "AssertionError" {
					msg = n.String() + ": " + msg
				}
			}
		}
		for _, f := range ex.Stack() {
			pos := f.Position()
			if pos.Filename != "" && strings.HasPrefix(pos.Filename, root+string(filepath.Separator)) && pos.Line > 0 &&
				!strings.HasSuffix(pos.Filename, "hoster-test.js") {
				return msg, fmt.Sprintf("%s:%d:%d", strings.TrimPrefix(pos.Filename, root+string(filepath.Separator)), pos.Line, pos.Column)
			}
		}
		return msg, ""
	}
	return err.Error(), ""
}

// placeIn pulls "file:line:col" out of a stack line that names root.
func placeIn(root, line string) string {
	i := strings.Index(line, root+string(filepath.Separator))
	if i < 0 {
		return ""
	}
	s := line[i+len(root)+1:]
	if j := strings.IndexAny(s, "()"); j >= 0 {
		s = s[:j]
	}
	return s
}

// binder makes a test's objects over a Game, one object for each of its
// instances (so that a.instance === b.instance when they play together).
type binder struct {
	vm        *goja.Runtime
	parse     goja.Callable
	instances map[string]*goja.Object // by id
}

func newBinder(vm *goja.Runtime) *binder {
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	return &binder{vm: vm, parse: parse, instances: map[string]*goja.Object{}}
}

// throw raises err in the test's JavaScript.
func (b *binder) throw(err error) { panic(b.vm.NewGoError(err)) }

// fromJSON is a JSON value as the test's JavaScript value.
func (b *binder) fromJSON(raw []byte, err error) goja.Value {
	if err != nil {
		b.throw(err)
	}
	v, err := b.parse(goja.Undefined(), b.vm.ToValue(string(raw)))
	if err != nil {
		b.throw(err)
	}
	return v
}

// getter defines a read-only property of obj computed by f.
func (b *binder) getter(obj *goja.Object, name string, f func() goja.Value) {
	obj.DefineAccessorProperty(name, b.vm.ToValue(func(goja.FunctionCall) goja.Value { return f() }), nil, goja.FLAG_FALSE, goja.FLAG_TRUE)
}

// bindGame makes the test's `game` object over g.
func bindGame(vm *goja.Runtime, g Game) *goja.Object {
	b := newBinder(vm)
	obj := vm.NewObject()
	obj.Set("join", func(params map[string]any) *goja.Object {
		p := map[string]string{}
		for k, v := range params {
			p[k] = fmt.Sprint(v)
		}
		pl, err := g.Join(p)
		if err != nil {
			b.throw(fmt.Errorf("game.join: %w", err))
		}
		return b.player(pl)
	})
	obj.Set("advance", func(seconds float64) {
		if seconds < 0 || math.IsNaN(seconds) || math.IsInf(seconds, 0) {
			b.throw(fmt.Errorf("game.advance(%v): seconds must be a finite number, at least 0", seconds))
		}
		if err := g.Advance(time.Duration(seconds * float64(time.Second))); err != nil {
			b.throw(fmt.Errorf("game.advance: %w", err))
		}
	})
	b.getter(obj, "state", func() goja.Value { return b.fromJSON(g.State()) })
	b.getter(obj, "players", func() goja.Value { return b.fromJSON(g.Players()) })
	b.getter(obj, "entities", func() goja.Value { return b.fromJSON(g.Entities()) })
	b.getter(obj, "logs", func() goja.Value { return vm.ToValue(g.Logs()) })
	b.getter(obj, "instances", func() goja.Value {
		var list []any
		for _, in := range g.Instances() {
			list = append(list, b.instance(in))
		}
		return vm.NewArray(list...)
	})
	return obj
}

// instance is the test's object for in, made once.
func (b *binder) instance(in Instance) *goja.Object {
	if obj := b.instances[in.ID()]; obj != nil {
		return obj
	}
	obj := b.vm.NewObject()
	obj.Set("id", in.ID())
	if in.Room() != "" {
		obj.Set("room", in.Room())
	} else {
		obj.Set("room", goja.Null())
	}
	b.getter(obj, "locked", func() goja.Value { return b.vm.ToValue(in.Locked()) })
	b.getter(obj, "ended", func() goja.Value { return b.vm.ToValue(in.Ended()) })
	b.getter(obj, "state", func() goja.Value { return b.fromJSON(in.State()) })
	b.getter(obj, "players", func() goja.Value { return b.fromJSON(in.Players()) })
	b.getter(obj, "entities", func() goja.Value { return b.fromJSON(in.Entities()) })
	b.instances[in.ID()] = obj
	return obj
}

// player makes a test's player object over p.
func (b *binder) player(p Player) *goja.Object {
	vm := b.vm
	obj := vm.NewObject()
	obj.Set("id", p.ID())
	if in := p.Instance(); in != nil {
		obj.Set("instance", b.instance(in))
	} else {
		obj.Set("instance", goja.Null())
	}
	obj.Set("send", func(command string, args goja.Value) {
		raw := json.RawMessage("{}")
		if args != nil && !goja.IsUndefined(args) && !goja.IsNull(args) {
			j, err := json.Marshal(args.Export())
			if err != nil {
				b.throw(fmt.Errorf("player.send: %w", err))
			}
			raw = j
		}
		if err := p.Send(command, raw); err != nil {
			b.throw(fmt.Errorf("player.send: %w", err))
		}
	})
	obj.Set("sees", p.Sees)
	for name, f := range map[string]func() error{"leave": p.Leave, "drop": p.Drop, "resume": p.Resume} {
		obj.Set(name, func() {
			if err := f(); err != nil {
				b.throw(fmt.Errorf("player.%s: %w", name, err))
			}
		})
	}
	b.getter(obj, "messages", func() goja.Value {
		var list strings.Builder
		list.WriteByte('[')
		for i, m := range p.Messages() {
			if i > 0 {
				list.WriteByte(',')
			}
			list.Write(m)
		}
		list.WriteByte(']')
		return b.fromJSON([]byte(list.String()), nil)
	})
	return obj
}
