// The browser library of every game. hoster gen (pkg/gen/client.go) writes
// it into each game folder as hoster.client.js: above it a header naming the
// game, and in place of the SCHEMA line below the game's schema (its name,
// its player and entity fields, its commands' arguments); everything after
// this comment is written as it stands. As it stands it is the library of a
// game with no fields and no commands, which its tests (client.test.js, run
// by node --test from TestClientLibraryUnits) load with schemas of their own.

(function (root, factory) {
  var lib = factory(root);
  if (typeof module === "object" && module && module.exports) {
    module.exports = lib;
  } else {
    var prev = root.Hoster;
    lib.games = (prev && prev.games) || {};
    lib.games[lib.game] = lib;
    root.Hoster = lib;
  }
})(typeof globalThis !== "undefined" ? globalThis : typeof self !== "undefined" ? self : this, function (root) {
  "use strict";
  var SCHEMA = {"game":"example.com/game","player":{},"entities":{},"commands":{}};
  // INTERPOLATE names, per type, the number fields game.view smooths.
  var INTERPOLATE = {};
  (function () {
    function pick(fields) {
      return Object.keys(fields || {}).filter(function (k) { var f = fields[k]; return f && typeof f === "object" && f.interpolate; });
    }
    INTERPOLATE.player = pick(SCHEMA.player);
    Object.keys(SCHEMA.entities || {}).forEach(function (t) { INTERPOLATE[t] = pick(SCHEMA.entities[t]); });
  })();
  var script = root.document && root.document.currentScript && root.document.currentScript.src;
  // PROTOCOL is the compact encoding of updates (docs/protocol.md), asked
  // for as a WebSocket subprotocol; a server that does not take it speaks
  // JSON.
  var PROTOCOL = "hoster.compact.1";

  // utf8 reads n bytes of b from pos as UTF-8.
  var utf8Decoder = typeof TextDecoder !== "undefined" ? new TextDecoder() : null;
  function utf8(b, pos, n) {
    var s = "", i;
    for (i = pos; i < pos + n && b[i] < 0x80; i++) s += String.fromCharCode(b[i]);
    if (i === pos + n) return s;
    if (!utf8Decoder) throw new Error("hoster: no TextDecoder to read a string");
    return utf8Decoder.decode(b.subarray(pos, pos + n));
  }

  // The compact decoder's reading state: the frame's bytes, a view of them,
  // the position, and the last mask read (bits, as 0 and 1, and its length).
  var rb = null, rv = null, rp = 0, bits = [], nbits = 0;
  function fail(what) { throw new Error("hoster: a compact update " + what); }
  function rbyte() { if (rp >= rb.length) fail("ends early"); return rb[rp++]; }
  function ruint() {
    var c = rbyte();
    if (c < 128) return c;
    var x = c & 127, mul = 128;
    do { c = rbyte(); x += (c & 127) * mul; mul *= 128; } while (c & 128);
    return x;
  }
  function unzigzag(z) { return z % 2 === 0 ? z / 2 : -(z + 1) / 2; }
  function rstr() { var len = ruint(); if (rp + len > rb.length) fail("ends early"); var s = utf8(rb, rp, len); rp += len; return s; }
  function rmask() {
    var c, k;
    nbits = 0;
    do { c = rbyte(); for (k = 0; k < 7; k++) bits[nbits++] = (c >> k) & 1; } while (c & 128);
  }
  function rnum(q) {
    var v = ruint(), x;
    if (v === 0) { if (rp + 8 > rb.length) fail("ends early"); x = rv.getFloat64(rp, true); rp += 8; return x; }
    if (v === 1) { if (rp + 4 > rb.length) fail("ends early"); x = rv.getFloat32(rp, true); rp += 4; return x; }
    x = unzigzag(v - 2);
    return q > 0 ? x / q : q < 0 ? x * -q : x;
  }
  // rfields reads a field set by a table: the values' mask, the values,
  // and when its flag is set the nulls' mask.
  function rfields(table) {
    rmask();
    var f = {}, k, t, n = Math.min(table.length, nbits - 1), nulls = bits[0];
    for (k = 0; k < n; k++) {
      if (!bits[k + 1]) continue;
      t = table[k];
      f[t.name] = t.type === "number" || t.type === "integer" ? rnum(t.q || 0) : t.type === "string" ? rstr() : ruint() === 1;
    }
    if (nulls) {
      rmask();
      n = Math.min(table.length, nbits - 1);
      for (k = 0; k < n; k++) if (bits[k + 1]) f[table[k].name] = null;
    }
    return f;
  }

  // decodeUpdate turns a compact update (an ArrayBuffer) into the JSON
  // protocol's message, by st: the field tables (types), what it knows by
  // handle (handles: handle -> [id, type number]), its player (me) and the
  // time of the previous update (time).
  function decodeUpdate(buf, st) {
    rb = new Uint8Array(buf); rv = new DataView(buf); rp = 0;
    var i, n, list;
    if (!st.types) fail("came before the field tables");
    if (rbyte() !== 1) fail("is of an unknown kind");
    var m = { t: "update", seq: ruint() };
    st.time += unzigzag(ruint());
    m.time = st.time;
    if ((n = ruint())) {
      list = m.appear = [];
      for (i = 0; i < n; i++) {
        var h = ruint(), ti = ruint(), id = rstr(), type = st.types[ti];
        if (!type) fail("names an unknown type");
        st.handles[h] = [id, ti];
        list.push({ id: id, type: type.type, f: rfields(type.fields) });
      }
    }
    if ((n = ruint())) {
      list = m.change = [];
      for (i = 0; i < n; i++) {
        var hc = ruint(), known = st.handles[hc];
        if (hc === 0) list.push({ id: st.me, f: rfields(st.types[0].private || []) });
        else if (known) list.push({ id: known[0], f: rfields(st.types[known[1]].fields) });
        else fail("changes a thing it never told of");
      }
    }
    if ((n = ruint())) {
      list = m.gone = [];
      for (i = 0; i < n; i++) {
        var hg = ruint(), g = st.handles[hg];
        if (!g) fail("says gone a thing it never told of");
        delete st.handles[hg];
        list.push(g[0]);
      }
    }
    if (rp !== rb.length) fail("has bytes left over");
    rb = rv = null;
    return m;
  }

  // validate applies the argument rule of the server, with its messages.
  function validate(schema, a) {
    if (a === undefined || a === null) a = {};
    if (typeof a !== "object" || Array.isArray(a)) return "arguments must be an object";
    var names = Object.keys(schema).sort(), i, n;
    for (i = 0; i < names.length; i++) if (!Object.prototype.hasOwnProperty.call(a, names[i])) return "missing argument " + JSON.stringify(names[i]);
    var given = Object.keys(a).sort();
    for (i = 0; i < given.length; i++) if (!Object.prototype.hasOwnProperty.call(schema, given[i])) return "unknown argument " + JSON.stringify(given[i]);
    for (i = 0; i < names.length; i++) {
      n = names[i];
      var s = schema[n], v = a[n], q = JSON.stringify(n);
      if (s.type === "number" || s.type === "integer") {
        if (typeof v !== "number" || !isFinite(v)) return "argument " + q + " must be a number";
        if (s.type === "integer" && Math.floor(v) !== v) return "argument " + q + " must be an integer";
        if (s.min !== undefined && v < s.min) return "argument " + q + " must be at least " + s.min;
        if (s.max !== undefined && v > s.max) return "argument " + q + " must be at most " + s.max;
      } else if (s.type === "string") {
        if (typeof v !== "string") return "argument " + q + " must be a string";
        if (s.maxLength !== undefined && Array.from(v).length > s.maxLength) return "argument " + q + " must be at most " + s.maxLength + " characters";
      } else if (s.type === "boolean") {
        if (typeof v !== "boolean") return "argument " + q + " must be a boolean";
      }
    }
    return null;
  }

  // defaultURL derives wss://<domain>/<game> from this script's own address.
  function defaultURL() {
    if (!script) throw new Error("hoster: connect() needs a URL when the library is not loaded by a <script> tag");
    var u = new URL(script);
    var game = u.pathname.split("/")[1];
    return (u.protocol === "https:" ? "wss://" : "ws://") + u.host + "/" + game;
  }

  // pageRoom is the ?room= of the page's own address: a shared link.
  function pageRoom() {
    try { return new URLSearchParams(root.location.search).get("room"); } catch (e) { return null; }
  }

  // roomLink is the link a player shares to a private room: the page's
  // origin and path with ?room=code, and nothing else of the page's address
  // (its query may hold the sharer's ?name=, its fragment anything).
  function roomLink(code) {
    if (!root.location) throw new Error("hoster: roomLink(code) needs a page: it links to the page's own address");
    var u = new URL(root.location.href);
    u.search = "";
    u.hash = "";
    u.searchParams.set("room", code);
    return u.toString();
  }

  // connect(url?, params?, options?): options.WebSocket is the WebSocket
  // implementation to use (Node's "ws" package for a bot), else the global.
  function connect(url, params, options) {
    if (url && typeof url === "object") { options = params; params = url; url = undefined; }
    url = url || defaultURL();
    params = params || {};
    options = options || {};
    if (params.room === undefined && pageRoom()) {
      var withRoom = {};
      for (var k in params) withRoom[k] = params[k];
      withRoom.room = pageRoom();
      params = withRoom;
    }
    var WS = options.WebSocket || root.WebSocket;
    if (!WS) throw new Error("hoster: no WebSocket in this environment: pass one, connect(url, params, {WebSocket: require(\"ws\")})");

    var listeners = {};
    var conn = {
      game: SCHEMA.game,
      players: {},   // id -> {id, type: "player", ...fields}
      entities: {},  // id -> {id, type, ...fields}
      me: null,      // this player's id once welcomed
      instance: null,
      room: params.room || null, // the private room's code, if any
      connected: false,
      commands: {},
      on: function (event, fn) { (listeners[event] = listeners[event] || []).push(fn); return conn; },
      off: function (event, fn) { listeners[event] = (listeners[event] || []).filter(function (f) { return f !== fn; }); return conn; },
      send: function (name, args) {
        var schema = SCHEMA.commands[name];
        if (!schema) throw new TypeError("unknown command " + JSON.stringify(name));
        var err = validate(schema, args);
        if (err) throw new TypeError(err);
        if (!ws || ws.readyState !== 1) throw new Error("hoster: not connected");
        ws.send(JSON.stringify({ c: name, a: args || {} }));
      },
      validate: function (name, args) {
        var schema = SCHEMA.commands[name];
        return schema ? validate(schema, args) : "unknown command " + JSON.stringify(name);
      },
      close: function () { closing = true; clearTimeout(timer); if (ws) ws.close(1000); },
      // view gives the thing with this id for drawing: its fields, with the
      // ones fields.json marks "interpolate" smoothed between the last two
      // updates, shown one send interval behind the server. null if unknown.
      view: function (id) {
        var o = conn.players[id] || conn.entities[id];
        if (!o) return null;
        var v = {}, k;
        for (k in o) v[k] = o[k];
        var mo = motion[id];
        if (!mo || offset === null) return v;
        var at = Date.now() - offset - sendMs;
        for (k in mo) {
          var s = mo[k];
          v[k] = at <= s[0] ? s[1] : at >= s[2] || s[2] <= s[0] ? s[3] : s[1] + (s[3] - s[1]) * (at - s[0]) / (s[2] - s[0]);
        }
        return v;
      }
    };
    Object.keys(SCHEMA.commands).forEach(function (name) {
      conn.commands[name] = function (args) { conn.send(name, args); };
    });

    var ws = null, resume = null, attempt = 0, unwelcomed = 0, timer = null, closing = false;
    // plain: ask for no subprotocol (JSON), after a socket that asked for
    // the compact one closed before it opened (a server that does not
    // take it may fail the handshake); st: the compact decoder's state.
    var plain = false, st = { types: null, handles: {}, me: null, time: 0 };
    // Interpolation: per thing, per smoothed field, [t0, v0, t1, v1] in
    // server time; the clock offset is the smallest local-minus-server
    // difference of the recent updates (the least delayed one).
    var motion = {}, offsets = [], offset = null, lastTime = null, sendMs = 100;
    function track(time, x, old) {
      var names = INTERPOLATE[x.type === "player" || !x.type ? "player" : x.type] || [];
      for (var i = 0; i < names.length; i++) {
        var f = names[i];
        if (!(f in x.f) || typeof x.f[f] !== "number") continue;
        var mo = motion[x.id] || (motion[x.id] = {});
        var from = old && typeof old[f] === "number" && lastTime !== null ? [lastTime, old[f]] : [time, x.f[f]];
        mo[f] = [from[0], from[1], time, x.f[f]];
      }
    }
    function emit(event, a, b) {
      (listeners[event] || []).slice().forEach(function (fn) {
        try { fn(a, b); } catch (e) { setTimeout(function () { throw e; }); }
      });
    }
    // unwelcome counts a socket that ended before its welcome; at the third
    // in a row it says why that may be.
    function unwelcome() {
      if (++unwelcomed === 3 && root.console) {
        // Refused before it opened, most likely: say why it may be.
        root.console.warn("hoster: the socket to " + url + " closed before its welcome 3 times in a row: the server refuses it before it opens. " +
          "Check that this page's origin" + (root.location ? " (" + root.location.origin + ")" : "") +
          " is in the game's \"origins\" in hoster-game.json, and that the URL names a game the server has loaded.");
      }
    }
    function open() {
      var q = [];
      Object.keys(params).forEach(function (k) { q.push(encodeURIComponent(k) + "=" + encodeURIComponent(params[k])); });
      if (resume) q.push("resume=" + encodeURIComponent(resume));
      var u = url + (q.length ? (url.indexOf("?") < 0 ? "?" : "&") + q.join("&") : ""), opened = false;
      var sock = ws = plain ? new WS(u) : new WS(u, PROTOCOL);
      ws.binaryType = "arraybuffer";
      ws.onopen = function () { opened = true; conn.connected = true; emit("open"); };
      ws.onmessage = function (ev) {
        var m;
        if (typeof ev.data !== "string") {
          try { m = decodeUpdate(ev.data, st); } catch (e) {
            // Not what the server meant: start over on a new socket.
            if (root.console) root.console.warn(e.message);
            sock.close(3000, "undecodable update");
            return;
          }
        } else {
          try { m = JSON.parse(ev.data); } catch (e) { return; }
        }
        if (m.t === "types") {
          st.types = m.types; // a hot reload changed the field tables
        } else if (m.t === "welcome") {
          attempt = 0; unwelcomed = 0;
          st = { types: m.types || null, handles: {}, me: m.player, time: 0 };
          resume = m.resume || null;
          conn.me = m.player; conn.instance = m.instance;
          conn.players = {}; conn.entities = {};
          motion = {}; lastTime = null;
          if (m.sendRate > 0) sendMs = 1000 / m.sendRate;
          emit("welcome", m);
        } else if (m.t === "update") {
          var time = typeof m.time === "number" ? m.time : null;
          if (time !== null) {
            offsets.push(Date.now() - time);
            if (offsets.length > 20) offsets.shift();
            offset = Math.min.apply(null, offsets);
          }
          (m.appear || []).forEach(function (x) {
            var o = { id: x.id, type: x.type };
            for (var k in x.f) o[k] = x.f[k];
            (x.type === "player" ? conn.players : conn.entities)[x.id] = o;
            delete motion[x.id];
            if (time !== null) track(time, x, null);
            emit("appear", o);
          });
          (m.change || []).forEach(function (x) {
            var o = conn.players[x.id] || conn.entities[x.id];
            if (!o) return;
            if (time !== null) track(time, { id: x.id, type: o.type, f: x.f }, o);
            for (var k in x.f) o[k] = x.f[k];
            emit("change", o, x.f);
          });
          (m.gone || []).forEach(function (id) {
            var o = conn.players[id] || conn.entities[id];
            delete conn.players[id]; delete conn.entities[id]; delete motion[id];
            if (o) emit("gone", o);
          });
          if (time !== null) lastTime = time;
        } else if (m.t === "error") {
          emit("error", m.error, m.c); // m.c: the command it answers, if any
        } else if (m.t === "message") {
          emit("message", m.type, m.data);
        }
      };
      var ended = false;
      // Node's WebSocket fails a handshake with an error and no close.
      ws.onerror = function () { if (!opened) sock.onclose({ code: 1006, reason: "" }); };
      ws.onclose = function (ev) {
        if (ended) return;
        ended = true;
        conn.connected = false;
        if (!opened && !plain && !closing) {
          // A server that does not take the compact encoding may fail the
          // handshake: ask again at once for none, and say nothing.
          plain = true;
          unwelcome();
          timer = setTimeout(open, 0);
          return;
        }
        if (!opened) plain = false; // not that either: next time as at first
        // Kicked (4000), the instance closed (4001), replaced (4002), or a
        // full or locked room (1013): coming back would not help.
        var final = ev.code === 4000 || ev.code === 4001 || ev.code === 4002 || ev.code === 1013;
        var again = !closing && !final;
        emit("close", { code: ev.code, reason: ev.reason, reconnecting: again });
        if (again) {
          unwelcome();
          var delay = Math.min(30000, 500 * Math.pow(2, attempt++));
          timer = setTimeout(open, delay / 2 + Math.random() * delay / 2);
        }
      };
    }
    open();
    return conn;
  }

  return { game: SCHEMA.game, schema: SCHEMA, connect: connect, roomLink: roomLink, validate: function (name, args) {
    var schema = SCHEMA.commands[name];
    return schema ? validate(schema, args) : "unknown command " + JSON.stringify(name);
  } };
});
