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
    // bytes is a Uint8Array over an ArrayBuffer Go made (see __sees).
    bytes: (function (U8) { return function (b) { return new U8(b); }; })(Uint8Array)
  }),
  writable: false, enumerable: false, configurable: false
});
