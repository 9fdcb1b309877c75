// Unit tests of the browser library (client.js), run by node --test from
// TestClientLibraryUnits in pkg/gen. Each test loads the library as hoster gen
// writes it, with a schema of its own, in a realm of its own whose
// WebSocket, timers, randomness and page address the test holds: nothing
// leaves the process and nothing waits on a clock.
"use strict";
const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const source = fs.readFileSync(path.join(__dirname, "client.js"), "utf8");
const schemaLine = /^  var SCHEMA = .*;$/m;

// plain copies a value out of the library's realm, whose objects have
// prototypes of their own, so that deepEqual compares only their contents.
const plain = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

// load evaluates the library with schema in its SCHEMA line, as a plain
// <script> on a page at pageURL (none: no page) would. It returns the
// library (the global Hoster), the sockets it opened, the timers it set and
// the warnings it wrote.
function load(schema, pageURL) {
  assert.match(source, schemaLine, "client.js has no SCHEMA line for gen to fill");
  const text = source.replace(schemaLine, "  var SCHEMA = " + JSON.stringify(schema) + ";");
  const sockets = [], timers = [], warnings = [];
  class FakeSocket {
    constructor(url, protocol) {
      this.url = url;
      this.protocol = protocol;
      this.sent = [];
      this.readyState = 0;
      this.closedWith = null;
      sockets.push(this);
    }
    send(data) { this.sent.push(data); }
    close(code, reason) { this.closedWith = { code, reason }; }
    // The server's side.
    accept() { this.readyState = 1; this.onopen(); }
    json(m) { this.onmessage({ data: JSON.stringify(m) }); }
    binary(bytes) { this.onmessage({ data: new Uint8Array(bytes).buffer }); }
    end(code, reason) { this.readyState = 3; this.onclose({ code, reason: reason || "" }); }
  }
  const realm = {
    URL, URLSearchParams, TextDecoder,
    console: { warn: (m) => warnings.push(m) },
    setTimeout: (fn, ms) => { timers.push({ fn, ms }); return timers.length; },
    clearTimeout: (id) => { if (timers[id - 1]) timers[id - 1].cleared = true; },
    WebSocket: FakeSocket,
  };
  if (pageURL) realm.location = new URL(pageURL);
  vm.createContext(realm);
  vm.runInContext("Math.random = function () { return 0; };", realm); // the shortest of each backoff
  realm.clock = 0;
  vm.runInContext("Date.now = function () { return clock; };", realm); // the page's clock: realm.clock
  vm.runInContext(text, realm, { filename: "client.js" });
  return { lib: realm.Hoster, realm, sockets, timers, warnings };
}

const game = "example.com/arena";
const schema = {
  game,
  player: { x: { type: "number", interpolate: true }, name: { type: "string" }, gold: { type: "integer", private: true } },
  entities: { coin: { v: { type: "integer" }, on: { type: "boolean" } } },
  commands: {
    move: { dx: { type: "integer", min: -1, max: 1 }, dy: { type: "integer", min: -1, max: 1 } },
    say: { text: { type: "string", maxLength: 4 } },
    aim: { angle: { type: "number" } },
    ready: { yes: { type: "boolean" } },
    leave: {},
  },
};

test("the library of a plain <script> is the global Hoster, by game too", () => {
  const { lib } = load(schema);
  assert.equal(lib.game, game);
  assert.deepEqual(plain(lib.schema), schema);
  assert.equal(lib.games[game], lib);
});

test("validate applies the server's argument rule, with its messages", () => {
  const { lib } = load(schema);
  const cases = [
    ["move", { dx: 1, dy: 0 }, null],
    ["move", { dx: -1, dy: 1 }, null],
    ["move", { dx: 5, dy: 0 }, 'argument "dx" must be at most 1'],
    ["move", { dx: -2, dy: 0 }, 'argument "dx" must be at least -1'],
    ["move", { dx: 0.5, dy: 0 }, 'argument "dx" must be an integer'],
    ["move", { dx: "1", dy: 0 }, 'argument "dx" must be a number'],
    ["move", { dx: NaN, dy: 0 }, 'argument "dx" must be a number'],
    ["move", { dx: Infinity, dy: 0 }, 'argument "dx" must be a number'],
    ["move", { dx: 1 }, 'missing argument "dy"'],
    ["move", { dx: 0, dy: 0, dz: 1 }, 'unknown argument "dz"'],
    ["move", "x", "arguments must be an object"],
    ["move", [1, 0], "arguments must be an object"],
    ["move", undefined, 'missing argument "dx"'],
    ["say", { text: "hi" }, null],
    ["say", { text: "😀😀😀😀" }, null], // four characters, eight UTF-16 units
    ["say", { text: "ééééé" }, 'argument "text" must be at most 4 characters'],
    ["say", { text: 4 }, 'argument "text" must be a string'],
    ["aim", { angle: 0.25 }, null],
    ["ready", { yes: false }, null],
    ["ready", { yes: "true" }, 'argument "yes" must be a boolean'],
    ["leave", undefined, null],
    ["leave", null, null],
    ["leave", { x: 1 }, 'unknown argument "x"'],
    ["nope", {}, 'unknown command "nope"'],
  ];
  for (const [name, args, want] of cases) {
    assert.equal(lib.validate(name, args), want, `validate(${JSON.stringify(name)}, ${JSON.stringify(args)})`);
  }
});

test("a command is checked before it is sent, and sent as {c, a}", () => {
  const { lib, sockets } = load(schema);
  const conn = lib.connect("wss://example.com/arena", {});
  assert.throws(() => conn.commands.move({ dx: 1, dy: 0 }), /not connected/);
  sockets[0].accept();
  assert.throws(() => conn.commands.move({ dx: 5, dy: 0 }), { name: "TypeError", message: 'argument "dx" must be at most 1' });
  assert.throws(() => conn.send("nope", {}), { name: "TypeError", message: 'unknown command "nope"' });
  conn.commands.move({ dx: 1, dy: 0 });
  conn.commands.leave();
  assert.deepEqual(sockets[0].sent.map((s) => JSON.parse(s)), [{ c: "move", a: { dx: 1, dy: 0 } }, { c: "leave", a: {} }]);
  assert.equal(conn.validate("say", { text: "ééééé" }), 'argument "text" must be at most 4 characters');
});

test("roomLink carries the page's origin and path and the room, nothing else", () => {
  assert.throws(() => load(schema).lib.roomLink("r42"), { message: "hoster: roomLink(code) needs a page: it links to the page's own address" });
  for (const [page, want] of [
    ["https://example.com/arena/?name=ada&room=old&colour=red#chat", "https://example.com/arena/?room=r42"],
    ["https://example.com/arena/index.html?name=ada", "https://example.com/arena/index.html?room=r42"],
    ["http://example.com.localhost:8080/arena/", "http://example.com.localhost:8080/arena/?room=r42"],
  ]) {
    assert.equal(load(schema, page).lib.roomLink("r42"), want, page);
  }
});

test("connect asks for the compact protocol, with the params and the page's room", () => {
  const { lib, sockets } = load(schema, "https://example.com/arena/?room=ab1&name=x");
  const conn = lib.connect("wss://example.com/arena", { name: "ada" });
  assert.equal(sockets[0].url, "wss://example.com/arena?name=ada&room=ab1");
  assert.equal(sockets[0].protocol, "hoster.compact.1");
  assert.equal(conn.room, "ab1");
  assert.throws(() => load(schema).lib.connect({}), /needs a URL/);
});

// welcomed connects, opens the socket and welcomes player p1 with the
// compact field tables.
const types = [
  { type: "player", fields: [{ name: "x", type: "number", q: 10 }, { name: "name", type: "string" }], private: [{ name: "gold", type: "integer" }] },
  { type: "coin", fields: [{ name: "v", type: "integer", q: -10 }, { name: "on", type: "boolean" }] },
];
function welcomed(pageURL) {
  const env = load(schema, pageURL);
  const conn = env.lib.connect("wss://example.com/arena", {});
  const events = [];
  for (const e of ["open", "welcome", "appear", "change", "gone", "error", "message", "close"]) {
    conn.on(e, (a, b) => events.push([e, plain(a), plain(b)]));
  }
  const sock = env.sockets[0];
  sock.accept();
  sock.json({ t: "welcome", game, instance: "i1", player: "p1", tickRate: 20, sendRate: 10, resume: "tok", types });
  return { ...env, conn, events, sock };
}

// The compact encoding's pieces (docs/protocol.md).
function uv(n) {
  const out = [];
  do { let c = n % 128; n = Math.floor(n / 128); if (n > 0) c |= 128; out.push(c); } while (n > 0);
  return out;
}
const zz = (n) => (n >= 0 ? 2 * n : -2 * n - 1);
const str = (s) => { const b = [...Buffer.from(s, "utf8")]; return [...uv(b.length), ...b]; };
const f64 = (x) => { const b = Buffer.alloc(8); b.writeDoubleLE(x); return [...b]; };
// mask: the nulls flag, then one bit per field of the table.
const mask = (bits) => { let c = 0; bits.forEach((b, i) => { c |= b << i; }); return [c]; };

test("the compact decoder applies appear, change and gone", () => {
  const { conn, events, sock, warnings } = welcomed();
  sock.binary([
    1, ...uv(1), ...uv(zz(1000)),
    ...uv(2), // appear
    ...uv(1), ...uv(0), ...str("p1"), ...mask([0, 1, 1]), ...uv(zz(125) + 2), ...str("adé"),
    ...uv(2), ...uv(1), ...str("c1"), ...mask([0, 1, 1]), ...uv(zz(7) + 2), ...uv(1),
    ...uv(1), // change: the player's own private fields
    ...uv(0), ...mask([0, 1]), ...uv(zz(-3) + 2),
    ...uv(0), // gone
  ]);
  assert.deepEqual(plain(conn.players), { p1: { id: "p1", type: "player", x: 12.5, name: "adé", gold: -3 } });
  assert.deepEqual(plain(conn.entities), { c1: { id: "c1", type: "coin", v: 70, on: true } });
  // A float64, a null, and a thing gone.
  sock.binary([
    1, ...uv(2), ...uv(zz(100)),
    ...uv(0),
    ...uv(1), ...uv(1), ...mask([1, 1, 0]), ...uv(0), ...f64(3.25), ...mask([0, 0, 1]),
    ...uv(1), ...uv(2),
  ]);
  assert.deepEqual(plain(conn.players.p1), { id: "p1", type: "player", x: 3.25, name: null, gold: -3 });
  assert.deepEqual(plain(conn.entities), {});
  assert.deepEqual(events.filter((e) => e[0] === "change" || e[0] === "gone").map((e) => [e[0], e[1].id, e[2]]), [
    ["change", "p1", { gold: -3 }],
    ["change", "p1", { x: 3.25, name: null }],
    ["gone", "c1", undefined],
  ]);
  assert.deepEqual(warnings, []);
  assert.equal(sock.closedWith, null);
});

test("an update the decoder cannot read ends the socket with 3000, saying why", () => {
  for (const [bytes, why] of [
    [[2, ...uv(1), ...uv(0), 0, 0, 0], "is of an unknown kind"],
    [[1, ...uv(1)], "ends early"],
    [[1, ...uv(1), ...uv(0), 0, ...uv(1), ...uv(9), ...mask([0]), 0], "changes a thing it never told of"],
    [[1, ...uv(1), ...uv(0), 0, 0, ...uv(1), ...uv(9)], "says gone a thing it never told of"],
    [[1, ...uv(1), ...uv(0), ...uv(1), ...uv(1), ...uv(7), ...str("x"), ...mask([0]), 0, 0], "names an unknown type"],
    [[1, ...uv(1), ...uv(0), 0, 0, 0, 99], "has bytes left over"],
  ]) {
    const { sock, warnings } = welcomed();
    sock.binary(bytes);
    assert.deepEqual(sock.closedWith, { code: 3000, reason: "undecodable update" }, why);
    assert.deepEqual(warnings, ["hoster: a compact update " + why]);
  }
  const { lib, sockets, warnings } = load(schema);
  lib.connect("wss://example.com/arena", {});
  sockets[0].accept();
  sockets[0].binary([1, ...uv(1), ...uv(0), 0, 0, 0]);
  assert.deepEqual(warnings, ["hoster: a compact update came before the field tables"]);
});

test("view smooths the interpolated fields one send interval behind", () => {
  const { conn, sock, realm } = welcomed();
  // Each update arrives when the server sent it: the clock offset is 0.
  realm.clock = 1000;
  sock.json({ t: "update", seq: 1, time: 1000, appear: [{ id: "p1", type: "player", f: { x: 0, name: "ada" } }] });
  realm.clock = 1100;
  sock.json({ t: "update", seq: 2, time: 1100, change: [{ id: "p1", f: { x: 10 } }] });
  // Shown one send interval (sendRate 10: 100 ms) behind the clock.
  for (const [clock, x] of [[1000, 0], [1100, 0], [1150, 5], [1175, 7.5], [1200, 10], [5000, 10]]) {
    realm.clock = clock;
    assert.equal(conn.view("p1").x, x, `at ${clock}`);
  }
  assert.equal(conn.view("p1").name, "ada"); // not interpolated: as it is
  assert.equal(conn.players.p1.x, 10); // the mirror stays raw
  assert.equal(conn.view("nobody"), null);
});

// A close the server sends: kicked, the instance closed, replaced, or a full
// or locked room is final; anything else comes back, resuming the player.
test("reconnection, per close code", () => {
  for (const [code, again] of [
    [1000, true], [1001, true], [1006, true], [1011, true], [3000, true],
    [4000, false], [4001, false], [4002, false], [1013, false],
  ]) {
    const { events, sock, sockets, timers } = welcomed();
    sock.end(code);
    assert.deepEqual(events.at(-1), ["close", { code, reason: "", reconnecting: again }, undefined], `close ${code}`);
    assert.equal(timers.length, again ? 1 : 0, `close ${code}: timers`);
    if (again) {
      assert.equal(timers[0].ms, 250, `close ${code}: the first delay`); // half of 500 ms, at the least random
      timers[0].fn();
      assert.equal(sockets.length, 2);
      assert.match(sockets[1].url, /[?&]resume=tok$/, "the new socket resumes the player");
    }
  }
  // Closed by the page: no coming back.
  const { conn, events, sock, timers } = welcomed();
  conn.close();
  assert.deepEqual(sock.closedWith, { code: 1000, reason: undefined });
  sock.end(1000);
  assert.deepEqual(events.at(-1), ["close", { code: 1000, reason: "", reconnecting: false }, undefined]);
  assert.equal(timers.length, 0);
});

test("the backoff doubles to 30 s and a welcome resets it", () => {
  const { sock, sockets, timers, warnings } = welcomed();
  sock.end(1006);
  const delays = [];
  for (let i = 0; i < 9; i++) {
    const t = timers.at(-1);
    delays.push(t.ms);
    t.fn();
    const s = sockets.at(-1);
    s.accept(); // opened, then gone before its welcome
    s.end(1006);
  }
  assert.deepEqual(delays, [250, 500, 1000, 2000, 4000, 8000, 15000, 15000, 15000]);
  assert.equal(warnings.length, 1, "one warning, at the third socket in a row without a welcome");
  assert.match(warnings[0], /closed before its welcome 3 times in a row/);
  timers.at(-1).fn();
  const s = sockets.at(-1);
  s.accept();
  s.json({ t: "welcome", game, instance: "i1", player: "p1", tickRate: 20, sendRate: 10, types });
  s.end(1006);
  assert.equal(timers.at(-1).ms, 250);
});

test("a handshake refused asks again at once without the compact protocol, then backs off", () => {
  const { lib, sockets, timers, warnings } = load(schema);
  const conn = lib.connect("wss://example.com/arena", {});
  const closes = [];
  conn.on("close", (c) => closes.push(plain(c)));
  sockets[0].end(1006); // never opened
  assert.deepEqual(closes, [], "the fallback is silent");
  assert.equal(timers.at(-1).ms, 0);
  timers.at(-1).fn();
  assert.equal(sockets[1].protocol, undefined, "the second asks for no protocol");
  sockets[1].end(1006); // refused again: the server refuses the socket itself
  assert.deepEqual(closes, [{ code: 1006, reason: "", reconnecting: true }]);
  assert.equal(timers.at(-1).ms, 250);
  timers.at(-1).fn();
  assert.equal(sockets[2].protocol, "hoster.compact.1", "then as at first");
  assert.deepEqual(warnings, []);
});
