package runtime

import (
	"maps"
	"math"
	"reflect"
	"slices"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	jstoken "github.com/dop251/goja/token"
)

// A visibility hook is asked about every thing for every viewer, some
// 1,400 calls a send round in bench/load's game, each of them interpreted
// by goja (the call, Math's lookup, the reads of the things' fields, each
// number boxed). A hook that is a single expression over its player's and
// thing's properties, literals and a few of Math's functions, such as the
// guide's `Math.abs(thing.x - player.x) < 40`, Go evaluates itself, with
// goja's own arithmetic: it has no side effects and reads nothing else, so
// its answer is the call's. Go stops and hands the rest of the round to
// JavaScript (__sees) at the first operand it does not follow (an object's
// value, a string in arithmetic, an object that is not a thing, a property
// a thing lacks while its prototype could give it one), and does not start
// when Math is no longer the built-in where the hook finds it (pureNow).
// The things' fields are read where the records keep them, so a value
// written by any hook is seen at once. Caching answers between rounds is
// not done: a hook may read anything, and nothing proves that what it read
// did not change.

// The expression is compiled to Go closures of three kinds, by what its
// context needs of a node: a number (arithmetic, comparisons and Math's
// arguments: an operand that is not a number is not followed), a truth
// value (the result, !, && and || and ?: tests) or a primitive value.
// Each reports ok false when Go does not follow the operands it met.
type (
	numFn  func(p, t *thing) (float64, bool)
	boolFn func(p, t *thing) (bool, bool)
	valFn  func(p, t *thing) (pval, bool)
)

// pureHook is a visibility hook Go evaluates: its expression, and the
// names of Math's functions it calls (as a JavaScript array for
// __js.pure).
type pureHook struct {
	sees  boolFn
	math  []string
	mathV goja.Value
	keys  goja.Value // the properties it reads, as a JavaScript array
	// unset is whether a property a thing lacks reads as undefined this
	// round: every thing's prototype is Object.prototype, which has none of
	// keys (see now).
	unset bool
	// __js.pure and __js.unset, and Object.prototype as the game found it
	intact, unsetFn goja.Callable
	objProto        *goja.Object
}

// pkind is the type of a value a pure hook computes.
type pkind uint8

const (
	kUndef pkind = iota
	kNull
	kNum
	kBool
	kStr
)

// pval is a JavaScript primitive: a number n, a boolean (n 1 or 0), a
// string s.
type pval struct {
	n float64
	s goja.Value
	k pkind
}

// pureMath1 are the functions of one argument of Math a pure hook may
// call, as goja computes them (and Math.min and Math.max); __js.pure
// checks they are still Math's.
var pureMath1 = map[string]func(float64) float64{
	"abs": math.Abs, "sqrt": math.Sqrt, "floor": math.Floor, "ceil": math.Ceil,
}

// compilePure is the hook whose source (Function.prototype.toString's) is
// src as a pure hook, nil when it is not one: an ordinary or arrow
// function of at most three plain parameters whose body returns one
// expression of literals, properties of its second and third parameters,
// unary - + !, binary + - *, comparisons, equality, && || and ?:, and
// calls of Math.abs, sqrt, floor, ceil, min and max.
func compilePure(r *goja.Runtime, src string) *pureHook {
	params, body := parseHook(src)
	if params == nil || body == nil || params.Rest != nil || len(params.List) > 3 {
		return nil
	}
	c := &pureCompiler{r: r, h: &pureHook{}, params: map[string]int{}, math: map[string]bool{}, keys: map[string]bool{}}
	for n, b := range params.List {
		id, ok := b.Target.(*ast.Identifier)
		if !ok || b.Initializer != nil || id.Name == "Math" {
			return nil
		}
		if _, dup := c.params[id.Name.String()]; dup {
			return nil
		}
		c.params[id.Name.String()] = n
	}
	sees := c.cond(body)
	if sees == nil || c.refused {
		return nil
	}
	h := c.h
	h.sees, h.math = sees, slices.Sorted(maps.Keys(c.math))
	h.mathV, h.keys = r.ToValue(h.math), r.ToValue(slices.Sorted(maps.Keys(c.keys)))
	return h
}

// parseHook is the parameters and the returned expression of the function
// whose source is src; nil when its body is not one return statement (or
// an arrow's expression), or it is async or a generator.
func parseHook(src string) (*ast.ParameterList, ast.Expression) {
	prog, err := parser.ParseFile(nil, "", "("+src+")", 0)
	if err != nil || len(prog.Body) != 1 {
		return nil, nil
	}
	es, _ := prog.Body[0].(*ast.ExpressionStatement)
	if es == nil {
		return nil, nil
	}
	switch f := es.Expression.(type) {
	case *ast.FunctionLiteral:
		if !f.Async && !f.Generator {
			return f.ParameterList, returned(f.Body)
		}
	case *ast.ArrowFunctionLiteral:
		if f.Async {
			return nil, nil
		}
		switch b := f.Body.(type) {
		case *ast.ExpressionBody:
			return f.ParameterList, b.Expression
		case *ast.BlockStatement:
			return f.ParameterList, returned(b)
		}
	}
	return nil, nil
}

// returned is the expression of a body that is one return statement.
func returned(b *ast.BlockStatement) ast.Expression {
	if b == nil || len(b.List) != 1 {
		return nil
	}
	if ret, ok := b.List[0].(*ast.ReturnStatement); ok {
		return ret.Argument
	}
	return nil
}

// pureCompiler compiles a hook's expression; refused is set by the first
// node that is not of a pure hook.
type pureCompiler struct {
	r       *goja.Runtime
	h       *pureHook
	params  map[string]int
	math    map[string]bool
	keys    map[string]bool
	refused bool
}

// num is x in a context that needs a number.
func (c *pureCompiler) num(x ast.Expression) numFn {
	switch x := x.(type) {
	case *ast.NumberLiteral:
		if n, ok := numberLiteral(x); ok {
			return func(*thing, *thing) (float64, bool) { return n, true }
		}
	case *ast.DotExpression:
		if f := c.field(x); f != nil {
			return f.num
		}
	case *ast.UnaryExpression:
		if x.Operator == jstoken.MINUS || x.Operator == jstoken.PLUS {
			return c.unary(x)
		}
	case *ast.BinaryExpression:
		switch x.Operator {
		case jstoken.PLUS, jstoken.MINUS, jstoken.MULTIPLY:
			return c.arith(x)
		}
	case *ast.CallExpression:
		return c.call(x)
	}
	v := c.val(x)
	if v == nil {
		return nil
	}
	return func(p, t *thing) (float64, bool) {
		a, ok := v(p, t)
		return a.n, ok && a.k == kNum
	}
}

func (c *pureCompiler) unary(x *ast.UnaryExpression) numFn {
	a := c.num(x.Operand)
	if a == nil || x.Postfix {
		return c.refuse()
	}
	if x.Operator == jstoken.PLUS {
		return a
	}
	return func(p, t *thing) (float64, bool) {
		n, ok := a(p, t)
		return -n, ok
	}
}

func (c *pureCompiler) arith(x *ast.BinaryExpression) numFn {
	a, b := c.num(x.Left), c.num(x.Right)
	if a == nil || b == nil {
		return c.refuse()
	}
	var f func(x, y float64) float64
	switch x.Operator {
	case jstoken.PLUS:
		f = func(x, y float64) float64 { return float64(x + y) }
	case jstoken.MINUS:
		f = func(x, y float64) float64 { return float64(x - y) }
	default:
		f = mul
	}
	return func(p, t *thing) (float64, bool) {
		x, ok := a(p, t)
		if !ok {
			return 0, false
		}
		y, ok := b(p, t)
		return f(x, y), ok
	}
}

// call is Math.fn(args...), fn one of pureMath1's or min or max; every
// argument is evaluated, as goja converts each to a number.
func (c *pureCompiler) call(x *ast.CallExpression) numFn {
	d, ok := x.Callee.(*ast.DotExpression)
	if !ok {
		return c.refuse()
	}
	m, ok := d.Left.(*ast.Identifier)
	fn := d.Identifier.Name.String()
	f1 := pureMath1[fn]
	if !ok || m.Name != "Math" || (f1 == nil && fn != "min" && fn != "max") {
		return c.refuse()
	}
	args := make([]numFn, len(x.ArgumentList))
	for k, a := range x.ArgumentList {
		if args[k] = c.num(a); args[k] == nil {
			return c.refuse()
		}
	}
	c.math[fn] = true
	if f1 != nil && len(args) == 1 {
		a := args[0]
		return func(p, t *thing) (float64, bool) {
			n, ok := a(p, t)
			return f1(n), ok
		}
	}
	r, f := math.Inf(1), math.Min
	if fn == "max" {
		r, f = math.Inf(-1), math.Max
	}
	return func(p, t *thing) (float64, bool) {
		acc, nan := r, false
		for k, a := range args {
			n, ok := a(p, t)
			switch {
			case !ok:
				return 0, false
			case f1 != nil: // abs(x, extra...): the first only
				if k == 0 {
					acc = f1(n)
				}
			case math.IsNaN(n):
				nan = true
			default:
				acc = f(acc, n)
			}
		}
		if f1 != nil && len(args) == 0 || nan {
			return math.NaN(), true
		}
		return acc, true
	}
}

// cond is x in a context that needs its truth value.
func (c *pureCompiler) cond(x ast.Expression) boolFn {
	switch x := x.(type) {
	case *ast.UnaryExpression:
		if x.Operator == jstoken.NOT && !x.Postfix {
			a := c.cond(x.Operand)
			if a == nil {
				return c.refuseBool()
			}
			return func(p, t *thing) (bool, bool) {
				b, ok := a(p, t)
				return !b, ok
			}
		}
	case *ast.BinaryExpression:
		switch x.Operator {
		case jstoken.LOGICAL_AND, jstoken.LOGICAL_OR:
			return c.logical(x)
		case jstoken.LESS, jstoken.LESS_OR_EQUAL, jstoken.GREATER, jstoken.GREATER_OR_EQUAL:
			return c.compare(x)
		case jstoken.STRICT_EQUAL, jstoken.STRICT_NOT_EQUAL, jstoken.EQUAL, jstoken.NOT_EQUAL:
			return c.equal(x)
		}
	case *ast.ConditionalExpression:
		test, a, b := c.cond(x.Test), c.cond(x.Consequent), c.cond(x.Alternate)
		if test == nil || a == nil || b == nil {
			return c.refuseBool()
		}
		return func(p, t *thing) (bool, bool) {
			if q, ok := test(p, t); !ok {
				return false, false
			} else if q {
				return a(p, t)
			}
			return b(p, t)
		}
	}
	v := c.val(x)
	if v == nil {
		return nil
	}
	return func(p, t *thing) (bool, bool) {
		a, ok := v(p, t)
		return a.truthy(), ok
	}
}

// logical is a && b or a || b as a truth value.
func (c *pureCompiler) logical(x *ast.BinaryExpression) boolFn {
	a, b := c.cond(x.Left), c.cond(x.Right)
	if a == nil || b == nil {
		return c.refuseBool()
	}
	or := x.Operator == jstoken.LOGICAL_OR
	return func(p, t *thing) (bool, bool) {
		q, ok := a(p, t)
		if !ok || q == or {
			return q, ok
		}
		return b(p, t)
	}
}

// compare is a relational comparison of two numbers.
func (c *pureCompiler) compare(x *ast.BinaryExpression) boolFn {
	a, b := c.num(x.Left), c.num(x.Right)
	if a == nil || b == nil {
		return c.refuseBool()
	}
	var f func(x, y float64) bool
	switch x.Operator {
	case jstoken.LESS:
		f = func(x, y float64) bool { return x < y }
	case jstoken.LESS_OR_EQUAL:
		f = func(x, y float64) bool { return x <= y }
	case jstoken.GREATER:
		f = func(x, y float64) bool { return x > y }
	default:
		f = func(x, y float64) bool { return x >= y }
	}
	return func(p, t *thing) (bool, bool) {
		x, ok := a(p, t)
		if !ok {
			return false, false
		}
		y, ok := b(p, t)
		return f(x, y), ok
	}
}

// equal is ===, !==, == or != of two primitives; == between different
// types other than null and undefined is not followed.
func (c *pureCompiler) equal(x *ast.BinaryExpression) boolFn {
	a, b := c.val(x.Left), c.val(x.Right)
	if a == nil || b == nil {
		return c.refuseBool()
	}
	strict := x.Operator == jstoken.STRICT_EQUAL || x.Operator == jstoken.STRICT_NOT_EQUAL
	want := x.Operator == jstoken.STRICT_EQUAL || x.Operator == jstoken.EQUAL
	return func(p, t *thing) (bool, bool) {
		x, ok := a(p, t)
		if !ok {
			return false, false
		}
		y, ok := b(p, t)
		if !ok {
			return false, false
		}
		if x.k != y.k && !strict {
			if x.k > kNull || y.k > kNull {
				return false, false
			}
			return want, true // null == undefined
		}
		return x.strictEquals(y) == want, true
	}
}

// val is x in a context that needs its value.
func (c *pureCompiler) val(x ast.Expression) valFn {
	switch x := x.(type) {
	case *ast.NumberLiteral:
		if n, ok := numberLiteral(x); ok {
			return constant(pval{k: kNum, n: n})
		}
	case *ast.StringLiteral:
		return constant(pval{k: kStr, s: c.r.ToValue(x.Value.String())})
	case *ast.BooleanLiteral:
		return constant(boolVal(x.Value))
	case *ast.NullLiteral:
		return constant(pval{k: kNull})
	case *ast.DotExpression:
		if f := c.field(x); f != nil {
			return f.val
		}
	case *ast.BinaryExpression:
		if x.Operator == jstoken.LOGICAL_AND || x.Operator == jstoken.LOGICAL_OR {
			return c.logicalVal(x)
		}
		return c.asVal(x)
	case *ast.UnaryExpression, *ast.CallExpression, *ast.ConditionalExpression:
		return c.asVal(x)
	}
	c.refused = true
	return nil
}

// asVal is x, which is a number or a truth value by its operator, as a
// value.
func (c *pureCompiler) asVal(x ast.Expression) valFn {
	truth := false // a truth value by its operator, else a number
	switch x := x.(type) {
	case *ast.BinaryExpression:
		switch x.Operator {
		case jstoken.PLUS, jstoken.MINUS, jstoken.MULTIPLY:
		case jstoken.LESS, jstoken.LESS_OR_EQUAL, jstoken.GREATER, jstoken.GREATER_OR_EQUAL,
			jstoken.STRICT_EQUAL, jstoken.STRICT_NOT_EQUAL, jstoken.EQUAL, jstoken.NOT_EQUAL:
			truth = true
		default:
			return c.refuseVal()
		}
	case *ast.UnaryExpression:
		switch x.Operator {
		case jstoken.MINUS, jstoken.PLUS:
		case jstoken.NOT:
			truth = true
		default:
			return c.refuseVal()
		}
	}
	if truth {
		f := c.cond(x)
		if f == nil {
			return nil
		}
		return func(p, t *thing) (pval, bool) {
			q, ok := f(p, t)
			return boolVal(q), ok
		}
	}
	if q, ok := x.(*ast.ConditionalExpression); ok {
		test, a, b := c.cond(q.Test), c.val(q.Consequent), c.val(q.Alternate)
		if test == nil || a == nil || b == nil {
			return c.refuseVal()
		}
		return func(p, t *thing) (pval, bool) {
			if q, ok := test(p, t); !ok {
				return pval{}, false
			} else if q {
				return a(p, t)
			}
			return b(p, t)
		}
	}
	f := c.num(x)
	if f == nil {
		return nil
	}
	return func(p, t *thing) (pval, bool) {
		n, ok := f(p, t)
		return pval{k: kNum, n: n}, ok
	}
}

// logicalVal is a && b or a || b as a value: one of its operands.
func (c *pureCompiler) logicalVal(x *ast.BinaryExpression) valFn {
	a, b := c.val(x.Left), c.val(x.Right)
	if a == nil || b == nil {
		return c.refuseVal()
	}
	or := x.Operator == jstoken.LOGICAL_OR
	return func(p, t *thing) (pval, bool) {
		q, ok := a(p, t)
		if !ok || q.truthy() == or {
			return q, ok
		}
		return b(p, t)
	}
}

func (c *pureCompiler) refuse() numFn      { c.refused = true; return nil }
func (c *pureCompiler) refuseBool() boolFn { c.refused = true; return nil }
func (c *pureCompiler) refuseVal() valFn   { c.refused = true; return nil }
func constant(v pval) valFn                { return func(*thing, *thing) (pval, bool) { return v, true } }
func boolVal(b bool) pval                  { return pval{k: kBool, n: b2f(b)} }

// numberLiteral is x's value.
func numberLiteral(x *ast.NumberLiteral) (float64, bool) {
	switch n := x.Value.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// fieldRef is a property of the player (arg 1) or the thing (2), with
// where it is kept in each type of thing met.
type fieldRef struct {
	h     *pureHook
	arg   int
	key   string
	slots []fieldSlot
}

// fieldSlot is where a property is kept in things of type ts: declared
// field n, or an undeclared property when n < 0.
type fieldSlot struct {
	ts *typeSpec
	n  int
}

// field is a property of the second or third parameter, nil for any other
// member expression.
func (c *pureCompiler) field(x *ast.DotExpression) *fieldRef {
	if id, ok := x.Left.(*ast.Identifier); ok {
		if n, ok := c.params[id.Name.String()]; ok && n > 0 {
			c.keys[x.Identifier.Name.String()] = true
			return &fieldRef{h: c.h, arg: n, key: x.Identifier.Name.String()}
		}
	}
	c.refused = true
	return nil
}

// get is the property of p or t; nil when the thing lacks it, unless it
// reads as undefined this round (a lookup goes on to its prototype).
func (f *fieldRef) get(p, t *thing) goja.Value {
	th := p
	if f.arg == 2 {
		th = t
	}
	slot := -2
	for _, s := range f.slots {
		if s.ts == th.ts {
			slot = s.n
			break
		}
	}
	if slot == -2 {
		slot = -1
		slot = th.ts.find(f.key)
		f.slots = append(f.slots, fieldSlot{th.ts, slot})
	}
	var x goja.Value
	if slot >= 0 {
		x = th.vals[slot]
	} else {
		x = th.extra.get(f.key)
	}
	if x == nil && f.h.unset {
		return goja.Undefined()
	}
	return x
}

// num is the property as a number: undefined is NaN, null 0, a boolean 0
// or 1, as goja converts them; a string is not followed.
func (f *fieldRef) num(p, t *thing) (float64, bool) {
	x := f.get(p, t)
	if x == nil {
		return 0, false
	}
	if goja.IsNumber(x) || goja.IsUndefined(x) || goja.IsNull(x) {
		return x.ToFloat(), true
	}
	a, ok := primitive(x)
	return a.n, ok && a.k == kBool
}

func (f *fieldRef) val(p, t *thing) (pval, bool) {
	x := f.get(p, t)
	if x == nil {
		return pval{}, false
	}
	return primitive(x)
}

// mul is x * y as goja computes it: two integers whose product is zero
// give +0 (-0 only for 0 and -1), unlike IEEE's signed zero.
func mul(x, y float64) float64 {
	if gojaInt(x) && gojaInt(y) {
		if x == 0 && y == -1 || x == -1 && y == 0 {
			return math.Copysign(0, -1)
		}
		if x == 0 || y == 0 {
			return 0
		}
	}
	return float64(x * y)
}

// gojaInt reports whether goja holds f as an integer (floatToInt).
func gojaInt(f float64) bool {
	return (f != 0 || !math.Signbit(f)) && !math.IsInf(f, 0) && f == math.Trunc(f) && f >= -(1<<53) && f <= 1<<53
}

// primitive is x as a pval; ok is false for an object, a symbol or a
// BigInt.
func primitive(x goja.Value) (pval, bool) {
	switch {
	case goja.IsNumber(x):
		return pval{k: kNum, n: x.ToFloat()}, true
	case goja.IsString(x):
		return pval{k: kStr, s: x}, true
	case goja.IsUndefined(x):
		return pval{k: kUndef}, true
	case goja.IsNull(x):
		return pval{k: kNull}, true
	}
	if _, obj := x.(*goja.Object); !obj && x.ExportType() == boolType {
		return boolVal(x.ToBoolean()), true
	}
	return pval{}, false
}

// truthy is ToBoolean.
func (a pval) truthy() bool {
	switch a.k {
	case kNum, kBool:
		return a.n != 0 && !math.IsNaN(a.n)
	case kStr:
		return a.s.ToBoolean()
	}
	return false
}

// strictEquals is === of two primitives.
func (a pval) strictEquals(b pval) bool {
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kNum, kBool:
		return a.n == b.n
	case kStr:
		return a.s.StrictEquals(b.s)
	}
	return true
}

// mathUnbound reports whether, in the code src, the name Math is only read
// as an object (Math.abs) and never bound: a variable, parameter,
// function, class, import or catch binding of that name would be what a
// hook's Math means, not the global one. Code that names eval is refused
// too, since a direct eval can bind names at run time.
func mathUnbound(src []byte) bool {
	prog, err := parser.ParseFile(nil, "", src, 0)
	if err != nil {
		return false
	}
	ok := true
	dot, ident := reflect.TypeOf(ast.DotExpression{}), reflect.TypeOf(ast.Identifier{})
	var walk func(x reflect.Value)
	walk = func(x reflect.Value) {
		if !ok {
			return
		}
		switch x.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !x.IsNil() {
				walk(x.Elem())
			}
		case reflect.Slice:
			for i := range x.Len() {
				walk(x.Index(i))
			}
		case reflect.Struct:
			switch x.Type() {
			case ident:
				name := x.Interface().(ast.Identifier).Name
				ok = name != "Math" && name != "eval"
				return
			case dot: // a property's name binds nothing; Math.abs reads Math
				d := x.Interface().(ast.DotExpression)
				if id, is := d.Left.(*ast.Identifier); !is || id.Name != "Math" {
					walk(x.Field(0))
				}
				return
			}
			for i := range x.NumField() {
				if x.Type().Field(i).IsExported() && x.Type().Field(i).Name != "File" {
					walk(x.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(prog))
	return ok
}

// findPure takes the visibility hook as a pure hook when it is one (see
// compilePure); keepPure then checks the module.
func (v *vm) findPure() {
	if v.visible == nil {
		return
	}
	js, _ := v.rt.Get("__js").(*goja.Object)
	if js == nil {
		return
	}
	source, ok := goja.AssertFunction(js.Get("source"))
	intact, ok2 := goja.AssertFunction(js.Get("pure"))
	unset, ok3 := goja.AssertFunction(js.Get("unset"))
	objProto, ok4 := js.Get("objectPrototype").(*goja.Object)
	if !ok || !ok2 || !ok3 || !ok4 {
		return
	}
	src, err := source(goja.Undefined(), v.visibleV)
	if err != nil {
		return
	}
	if h := compilePure(v.rt, src.String()); h != nil {
		h.intact, h.unsetFn, h.objProto = intact, unset, objProto
		v.pure = h
	}
}

// keepPure drops the pure hook when it calls Math's functions and g's
// module may bind a Math of its own. It reads the whole module once per
// version, outside any hook's budget.
func (v *vm) keepPure(g *version) {
	if v.pure != nil && len(v.pure.math) > 0 && !g.mathUnbound() {
		v.pure = nil
	}
}

// pureNow reports whether this send round may evaluate the visibility
// hook in Go: it is pure, and Math is still the built-in where it looks.
// It finds whether a property a thing lacks reads as undefined this round.
func (v *vm) pureNow() bool {
	h := v.pure
	if h == nil {
		return false
	}
	if len(h.math) > 0 {
		ok, err := h.intact(goja.Undefined(), h.mathV)
		if err != nil || !ok.ToBoolean() {
			return false
		}
	}
	h.unset = false
	if ok, err := h.unsetFn(goja.Undefined(), h.keys); err != nil || !ok.ToBoolean() {
		return true
	}
	for _, r := range v.eng.list {
		if p := r.obj.Prototype(); p == nil || !p.SameAs(h.objProto) {
			return true
		}
	}
	h.unset = true
	return true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
