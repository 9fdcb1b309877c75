// The test API beside test() and game: a plain assert in the manner of
// Node's, whose failures name what was expected and what was found.
(function (g) {
  "use strict";
  function show(v) {
    try { return JSON.stringify(v); } catch (e) { return String(v); }
  }
  function AssertionError(message) {
    var e = new Error(message);
    e.name = "AssertionError";
    return e;
  }
  function deepEqual(a, b) {
    if (a === b) return true;
    if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return a !== a && b !== b;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    var ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    if (ka.length !== kb.length) return false;
    for (var i = 0; i < ka.length; i++) {
      if (ka[i] !== kb[i] || !deepEqual(a[ka[i]], b[kb[i]])) return false;
    }
    return true;
  }
  function assert(value, message) {
    if (!value) throw AssertionError(message || "expected a true value, got " + show(value));
  }
  assert.ok = assert;
  assert.equal = function (actual, expected, message) {
    if (actual !== expected && !(actual !== actual && expected !== expected)) {
      throw AssertionError(message || "expected " + show(expected) + ", got " + show(actual));
    }
  };
  assert.notEqual = function (actual, unexpected, message) {
    if (actual === unexpected) throw AssertionError(message || "expected anything but " + show(unexpected));
  };
  assert.deepEqual = function (actual, expected, message) {
    if (!deepEqual(actual, expected)) {
      throw AssertionError(message || "expected " + show(expected) + ", got " + show(actual));
    }
  };
  assert.throws = function (fn, message) {
    try { fn(); } catch (e) { return e; }
    throw AssertionError(message || "expected the function to throw");
  };
  g.assert = assert;
})(globalThis);
