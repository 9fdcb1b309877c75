// The built-ins the prelude relies on, taken before a game's code runs, in
// a global the game cannot replace (not writable, not configurable, frozen):
// a game that replaces JSON.stringify, JSON.parse, Object.keys or
// Array.prototype.push changes them for its own code only, never for the
// runtime's. (What the prelude still takes from the globals at call time is
// read by Go as data, checked, under the budget: see jsvalue.go.)
Object.defineProperty(this, "__js", {
  value: Object.freeze({
    stringify: JSON.stringify,
    parse: JSON.parse,
    keys: Object.keys,
    // push appends without Array.prototype.push (nor any lookup a game can
    // redirect), and is cheaper than it in goja.
    push: function (a, x) { a[a.length] = x; },
    push2: function (a, x, y) { a[a.length] = x; a[a.length] = y; },
    // enter calls f, a Go function, so that the hooks it calls are calls
    // from inside JavaScript (see vm.nested).
    enter: function (f) { f(); },
    // bytes is a Uint8Array over an ArrayBuffer Go made (see __sees).
    bytes: (function (U8) { return function (b) { return new U8(b); }; })(Uint8Array),
    // source is a function's source text (Function.prototype.toString's,
    // which a game may replace), for purehook.go.
    source: Function.prototype.call.bind(Function.prototype.toString),
    // pure reports whether Math and the functions of it named in names
    // are still the built-ins, own data properties of the global object
    // and of Math: then a hook's Math.abs is Math.abs, as a pure hook
    // evaluated in Go assumes (purehook.go). No accessor of the game's
    // runs.
    pure: (function (g, M, gopd, has) {
      var fns = { abs: M.abs, sqrt: M.sqrt, floor: M.floor, ceil: M.ceil, min: M.min, max: M.max };
      function data(o, k) {
        var d = gopd(o, k);
        return d !== undefined && has(d, "value") ? d.value : undefined;
      }
      return function (names) {
        if (data(g, "Math") !== M) return false;
        for (var k = 0; k < names.length; k++) if (data(M, names[k]) !== fns[names[k]]) return false;
        return true;
      };
    })(this, Math, Object.getOwnPropertyDescriptor, Function.prototype.call.bind(Object.prototype.hasOwnProperty)),
    // unset reports whether none of keys is a property of Object.prototype,
    // the prototype of things, nor of anything after it: then a thing that
    // lacks one of them reads it as undefined (purehook.go).
    unset: (function (OP, gopd, proto) {
      return function (keys) {
        if (proto(OP) !== null) return false;
        for (var k = 0; k < keys.length; k++) if (gopd(OP, keys[k]) !== undefined) return false;
        return true;
      };
    })(Object.prototype, Object.getOwnPropertyDescriptor, Object.getPrototypeOf),
    objectPrototype: Object.prototype
  }),
  writable: false, enumerable: false, configurable: false
});
