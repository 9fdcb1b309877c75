// The runtime's side of an instance, run once in each instance's goja
// runtime after the game's hoster.server.js. Game state never leaves
// JavaScript: Go calls __tick once per tick with every queued event, and
// __send once per send round, which returns finished update messages.
var __R = __hoster;
var __inst = null;
var __viewers = {}; // player id -> {round, known, seq}: see __send
var __now = 0;
var __nextEntity = 0;
// A field in the registry is a type name or {type, private}. __pf are the
// player fields every viewer sees, __pp the private ones (sent only to their
// own player), __ef[type] an entity type's; __ty[type] the expected types in
// the same order (and "player!" for __pp).
function __ftype(f) { return typeof f === "string" ? f : f.type; }
function __fpriv(f) { return !!(f && typeof f === "object" && f.private); }
var __pf = __js.keys(__R.player.fields).filter(function (k) { return !__fpriv(__R.player.fields[k]); }).sort();
var __pp = __js.keys(__R.player.fields).filter(function (k) { return __fpriv(__R.player.fields[k]); }).sort();
var __ef = {};
var __ty = {};
__js.keys(__R.entities).forEach(function (t) {
  __ef[t] = __js.keys(__R.entities[t].fields).sort();
  __ty[t] = __ef[t].map(function (k) { return __ftype(__R.entities[t].fields[k]); });
});
__ty.player = __pf.map(function (k) { return __ftype(__R.player.fields[k]); });
__ty["player!"] = __pp.map(function (k) { return __ftype(__R.player.fields[k]); });
// __pq[type][n] is how a number in field n is rounded on the wire (same
// order as __ty): 0 not at all; c > 0 to the nearest 1/c (precision 0.01:
// c = 100, so the value sent is the short decimal 12.35); c < 0 to the
// nearest multiple of -c.
function __fprec(f) {
  var p = f && typeof f === "object" ? f.precision : 0;
  if (!(p > 0)) return 0;
  var inv = 1 / p, r = Math.round(inv);
  return r >= 1 && Math.abs(inv - r) < 1e-9 * inv ? r : -p;
}
function __quant(x, c) {
  return c > 0 ? Math.round(x * c) / c : Math.round(x / -c) * -c;
}
var __pq = {};
__js.keys(__R.entities).forEach(function (t) {
  __pq[t] = __ef[t].map(function (k) { return __fprec(__R.entities[t].fields[k]); });
});
__pq.player = __pf.map(function (k) { return __fprec(__R.player.fields[k]); });
__pq["player!"] = __pp.map(function (k) { return __fprec(__R.player.fields[k]); });
var __bad = {}; // type.field -> true once a wrong value was reported

// __ok reports whether x (already normalised: no undefined, no NaN) is of
// the field type t; null (unset) is of every type. A wrong value is not
// sent, and the first per field and instance is reported as a hook error.
function __ok(t, x, type, field) {
  if (x === null) return true;
  var k = typeof x;
  if (t === "integer" ? k === "number" && x % 1 === 0 : k === t) return true;
  var key = type + "." + field;
  if (!__bad[key]) {
    __bad[key] = true;
    var v;
    try { v = __js.stringify(x); } catch (e) { v = String(x); }
    __js.push(__out, ["herr", "fields", "field " + field + " of " + (type === "player" ? "a player" : type) +
      " must be " + (t === "integer" ? "an integer" : "a " + t) + ", not " + (v === undefined ? k : v) + ": the value is not sent", false]);
  }
  return false;
}
var __counts = [0, 0, 0]; // appeared, changed, gone, since the last __takeCounts

// __out collects what hooks asked of Go since the last __tick returned it:
// ["err", player, command, message] an error frame for one player;
// ["herr", where, error text, ticking] a hook error to log (ticking: it was
// thrown by a tick, entity tick or timer);
// ["msg", player, frame] a message for one player, after the next update;
// ["kick", player, reason]; ["close", reason]; ["lock"]; ["unlock"].
var __out = [];
var __timers = []; // {at: ms, every: ms or 0, fn, dead}

// __Refusal is what instance.refuse throws: the command (or the join) is
// refused with its reason, and nothing is logged.
function __Refusal(reason) { this.reason = reason; }
__Refusal.prototype.toString = function () { return "refused: " + this.reason; };

// __hookErr records a hook's error for Go to log.
function __hookErr(where, e, ticking) {
  var text;
  if (e instanceof __Refusal) text = "instance.refuse called outside a command: " + e.reason;
  else if (e && typeof e === "object" && typeof e.stack === "string") text = e.stack;
  else text = "threw " + (function () { try { return __js.stringify(e); } catch (x) { return String(e); } })();
  __js.push(__out, ["herr", where, text, !!ticking]);
}

function __pid(player) {
  var id = player && typeof player === "object" ? player.id : player;
  if (typeof id !== "string") throw new TypeError("not a player: " + String(player));
  return id;
}

function __message(type, data) {
  if (typeof type !== "string" || type === "") throw new TypeError("a message type must be a non-empty string");
  var s = __js.stringify({ t: "message", type: type, data: data === undefined ? null : data });
  return s;
}

function __timer(seconds, fn, repeat) {
  if (typeof fn !== "function") throw new TypeError((repeat ? "every" : "after") + ": the second argument must be a function");
  var ms = Number(seconds) * 1000;
  if (!(ms >= 0) || !isFinite(ms) || (repeat && ms <= 0)) throw new RangeError((repeat ? "every" : "after") + ": seconds must be a " + (repeat ? "positive" : "non-negative") + " number, not " + String(seconds));
  var t = { at: __now + ms, every: repeat ? ms : 0, fn: fn, dead: false };
  __js.push(__timers, t);
  return { cancel: function () { t.dead = true; } };
}

// __runTimers calls the timers that are due, earliest first.
function __runTimers() {
  if (!__timers.length) return;
  var due = [], keep = [], i, t;
  for (i = 0; i < __timers.length; i++) {
    t = __timers[i];
    if (t.dead) continue;
    __js.push(t.at <= __now ? due : keep, t);
  }
  __timers = keep;
  due.sort(function (a, b) { return a.at - b.at; });
  for (i = 0; i < due.length; i++) {
    t = due[i];
    if (t.dead) continue;
    if (t.every) {
      t.at += t.every;
      if (t.at <= __now) t.at = __now + t.every;
      __js.push(__timers, t);
    }
    try { t.fn(__inst); } catch (e) { __hookErr("timer", e, true); }
  }
}

function __make(id) {
  __inst = {
    id: id,
    state: {},
    players: {},
    entities: {},
    spawn: function (type, fields) {
      if (!Object.prototype.hasOwnProperty.call(__R.entities, type)) {
        throw new Error("spawn: unknown entity type " + __js.stringify(type));
      }
      var e = {};
      for (var k in fields) e[k] = fields[k];
      e.id = "e" + (++__nextEntity);
      e.type = type;
      __inst.entities[e.id] = e;
      return e;
    },
    remove: function (id) { delete __inst.entities[id]; },
    now: function () { return __now; },
    log: function () { __log(Array.prototype.map.call(arguments, String).join(" ")); },
    send: function (player, type, data) {
      var id = __pid(player);
      if (__inst.players[id]) __js.push(__out, ["msg", id, __message(type, data)]);
    },
    broadcast: function (type, data) {
      var m = __message(type, data);
      for (var id in __inst.players) __js.push(__out, ["msg", id, m]);
    },
    kick: function (player, reason) {
      var id = __pid(player);
      __js.push(__out, ["kick", id, reason === undefined ? "" : String(reason)]);
      __leave(id); // gone from every list before kick returns
    },
    close: function (reason) { __js.push(__out, ["close", reason === undefined ? "" : String(reason)]); },
    lock: function () { __js.push(__out, ["lock"]); },
    unlock: function () { __js.push(__out, ["unlock"]); },
    after: function (seconds, fn) { return __timer(seconds, fn, false); },
    every: function (seconds, fn) { return __timer(seconds, fn, true); },
    refuse: function (reason) { throw new __Refusal(reason === undefined ? "refused" : String(reason)); }
  };
}

// __init starts an instance; params are its first player's (JSON). What
// create returns, unless undefined, becomes instance.state: a create that
// returns nothing keeps what it set there.
function __init(id, now, params) {
  __now = now;
  __make(id);
  if (!__R.instance.create) return;
  var state = __R.instance.create(__inst, __js.parse(params));
  if (state !== undefined) __inst.state = state;
}

// __takeOut hands __out to Go (as JSON, "" when empty).
function __takeOut() {
  if (!__out.length) return "";
  var s = __js.stringify(__out);
  __out = [];
  return s;
}

// __export hands a live instance to new code: its players, entities,
// viewers' last-sent state, and either its serialised state (when this code
// has a serialise hook) or its state object as it is.
function __export() {
  var out = { id: __inst.id, players: __inst.players, entities: __inst.entities, viewers: __viewers,
    round: __round, recs: __recs, tombs: __tombs, visible: !!__R.player.visible, nextEntity: __nextEntity, nextHandle: __nextHandle };
  if (__R.instance.serialise) out.saved = __R.instance.serialise(__inst);
  else out.state = __inst.state;
  return __js.stringify(out);
}

// __adopt takes over an instance exported by older code; restore rebuilds
// the state when this code has the hook and the old code serialised.
function __adopt(json, now) {
  var x = __js.parse(json);
  __now = now;
  __make(x.id);
  __inst.players = x.players;
  __inst.entities = x.entities;
  __viewers = x.viewers;
  __round = x.round;
  __recs = x.recs;
  __tombs = x.tombs;
  __nrecs = 0;
  for (var id in __recs) { __refit(__recs[id]); __nrecs++; }
  __ntombs = __js.keys(__tombs).length;
  if (x.visible !== !!__R.player.visible) __switchMode();
  __nextEntity = x.nextEntity;
  __nextHandle = x.nextHandle || 0;
  for (var vid in __viewers) delete __viewers[vid].pv; // the private fields may differ: all sent again
  if ("saved" in x && __R.instance.restore) {
    __inst.state = {};
    __R.instance.restore(__inst, x.saved);
  } else {
    __inst.state = "state" in x ? x.state : (x.saved !== undefined ? x.saved : {});
  }
}

// __leaving holds the ids whose leave hook is running, so that a kick of
// that player from its own leave hook does not run it again.
var __leaving = {};

// __leave takes a player out of the game: its leave hook runs (the player
// still listed), then it is gone from instance.players and the viewers;
// the others are told gone at their next update.
function __leave(id) {
  var p = __inst.players[id];
  if (!p || __leaving[id]) return;
  if (__R.player.leave) {
    __leaving[id] = true;
    try { __R.player.leave(__inst, p); } catch (e) { __hookErr("leave", e, false); }
    delete __leaving[id];
  }
  delete __inst.players[id];
  delete __viewers[id];
}

// __tick applies the queued events in order, then runs the timers that are
// due and ticks (when dt > 0), and returns what hooks asked of Go (see
// __out). A hook that throws is recorded and the rest goes on: a command's
// error goes to its player.
// events: [["join", id, params] | ["leave", id] | ["drop", id] | ["resume", id] | ["cmd", id, name, args]]
function __tick(dt, now, evs) {
  __now = now;
  for (var i = 0; i < evs.length; i++) {
    var ev = evs[i], p;
    if (ev[0] === "join") {
      p = { id: ev[1], connected: true };
      __inst.players[p.id] = p;
      __viewers[p.id] = { round: -1, known: {}, seq: 0 }; // gets everything it sees first
      if (__R.player.join) {
        try { __R.player.join(__inst, p, ev[2]); } catch (e) {
          // A player whose join failed or was refused is not in the game.
          delete __inst.players[p.id];
          delete __viewers[p.id];
          if (e instanceof __Refusal) {
            __js.push(__out, ["kick", p.id, e.reason]);
          } else {
            __hookErr("join", e, false);
            __js.push(__out, ["kick", p.id, "joining the game failed", 1011]);
          }
        }
      }
    } else if (ev[0] === "leave") {
      __leave(ev[1]); // nothing left to do when a kick did it
    } else if (ev[0] === "drop") {
      p = __inst.players[ev[1]];
      if (p && p.connected !== false) {
        p.connected = false;
        if (__R.player.disconnect) { try { __R.player.disconnect(__inst, p); } catch (e) { __hookErr("disconnect", e, false); } }
      }
    } else if (ev[0] === "resume") {
      // It starts over: it knows nothing, and nothing it was remembered
      // to know across a reload (stale) is told gone to it.
      if (__viewers[ev[1]]) { __viewers[ev[1]].round = -1; __viewers[ev[1]].known = {}; __viewers[ev[1]].nk = 0; delete __viewers[ev[1]].stale; }
      p = __inst.players[ev[1]];
      if (p && p.connected === false) {
        p.connected = true;
        if (__R.player.reconnect) { try { __R.player.reconnect(__inst, p); } catch (e) { __hookErr("reconnect", e, false); } }
      }
    } else if (ev[0] === "cmd") {
      p = __inst.players[ev[1]];
      if (p) {
        try { __R.commands[ev[2]].run(__inst, p, ev[3]); } catch (e) {
          if (e instanceof __Refusal) {
            __js.push(__out, ["err", p.id, ev[2], e.reason]);
          } else {
            __js.push(__out, ["err", p.id, ev[2], "command " + ev[2] + " failed"]);
            __hookErr("command " + ev[2], e, false);
          }
        }
      }
    }
  }
  if (dt > 0) {
    __runTimers();
    if (__R.instance.tick) { try { __R.instance.tick(__inst, dt); } catch (e) { __hookErr("tick", e, true); } }
    var ids = __js.keys(__inst.entities);
    for (var j = 0; j < ids.length; j++) {
      var en = __inst.entities[ids[j]];
      if (!en) continue;
      var t = __R.entities[en.type];
      if (t && t.tick) { try { t.tick(__inst, en, dt); } catch (e) { __hookErr("entity " + en.type + " tick", e, true); } }
    }
  }
  return __takeOut();
}

function __object(fields, values) {
  var o = {};
  for (var i = 0; i < fields.length; i++) o[fields[i]] = values[i];
  return o;
}

// __send computes, for each ready viewer, the delta against what it last
// received, and returns [viewer id, message, ...] for those with changes.
// A viewer not ready this round keeps what it last received, so its next
// update merges everything it missed.
// compact[i] is true when ready[i] takes the compact encoding: its message
// is then [seq, body], the body the number of one Go holds (see __cbody),
// which Go frames.
function __send(ready, compact) {
  var prev = __round, round = ++__round, pre = false;
  if (compact && !__R.player.visible) for (var i = 0; i < compact.length && !pre; i++) pre = compact[i];
  var d = __advance(round, pre);
  var out = __R.player.visible ? __sendVisible(ready, compact, round) : __sendShared(ready, compact, prev, round, d);
  __prune();
  return out;
}

// One record per thing is kept, updated in place every send round: its
// field values, the send round each field last changed in, and the round it
// appeared in; a thing that goes leaves a tombstone while a viewer that may
// still know it is behind. A viewer is then the round it last received (and,
// with a visibility hook, the set of things it knows): what changed for it
// is what changed after its round. Without a visibility hook a viewer in
// step (it received the previous round) gets the round's delta, computed and
// encoded once for all; one that is behind gets everything newer than its
// round, merged from the records. Nothing is copied per viewer or per round.
var __round = 0;
var __recs = {};  // thing id -> {type, fields, v: [values], fr: [field rounds], a: appear round, seen: round, h: handle}
var __nrecs = 0;
var __tombs = {}; // thing id -> {a: appear round, r: round it went, h: handle}
// A delta is {appear: [{id, type, f}], change: [{id, f}], gone: [id]} (the
// JSON of an update) with, for the compact encoding, the records of its
// appears (ar) and changes (cr) and the handles of its gones (gh).
// A round's delta with pre set has its plain changes (a few numbers, no
// null) already encoded for the compact body, by __track into Go; slow
// lists (by index) those it left to __cbody.
function __delta() { return { appear: [], change: [], gone: [], ar: [], cr: [], gh: [], pre: false, slow: [] }; }
var __ntombs = 0;

function __norm(x) {
  return x === undefined || (typeof x === "number" && !isFinite(x)) ? null : x;
}

function __fieldsOf(type) {
  return type === "player" ? __pf : (__ef[type] || []);
}

function __typesOf(type) {
  return __ty[type] || [];
}

function __precisionsOf(type) {
  return __pq[type] || [];
}

// __private is what viewer v's own player's private fields changed to since
// it last got them (all of them when fresh), or null.
function __private(v, me, fresh) {
  var f = null, pv = v.pv, n, x, name, ty = __ty["player!"], pq = __pq["player!"];
  if (!pv) { pv = v.pv = []; fresh = true; }
  for (n = 0; n < __pp.length; n++) {
    name = __pp[n];
    x = __norm(me[name]);
    if (!__ok(ty[n], x, "player", name)) x = n in pv ? pv[n] : null;
    else if (typeof x === "number" && pq[n] !== 0) x = __quant(x, pq[n]);
    if (fresh || x !== pv[n]) {
      pv[n] = x;
      (f = f || {})[name] = x;
    }
  }
  return f;
}

// __appear starts the record of a thing seen for the first time.
function __appear(id, type, obj, round, d) {
  var fields = __fieldsOf(type), ty = __typesOf(type), pq = __precisionsOf(type), v = new Array(fields.length), fr = new Array(fields.length);
  for (var n = 0; n < fields.length; n++) {
    v[n] = __norm(obj[fields[n]]);
    if (!__ok(ty[n], v[n], type, fields[n])) v[n] = null;
    else if (typeof v[n] === "number" && pq[n] !== 0) v[n] = __quant(v[n], pq[n]);
    fr[n] = round;
  }
  var r = __recs[id] = { type: type, fields: fields, ty: ty, pq: pq, v: v, fr: fr, a: round, seen: round, h: ++__nextHandle };
  __nrecs++;
  if (__tombs[id]) { delete __tombs[id]; __ntombs--; }
  __js.push(d.appear, { id: id, type: type, f: __object(fields, v) });
  __js.push(d.ar, r);
}

// __track brings the records of the things in objs (players when player is
// true, else entities) up to date for this round, adds what changed to the
// round's delta d, and returns how many things there are. It is the hot
// loop of every send round, so it keeps to locals and makes no calls for a
// thing that already has a record: in goja, globals and calls cost more
// than the comparisons.
function __track(objs, player, round, d) {
  var recs = __recs, change = d.change, cr = d.cr, count = 0, id, obj, r, fs, rv, pq, f, n, x, t, c;
  var pre = d.pre, a = __preVals, cchg = __cchg, m = 0, na = 0, plain = false; // see __delta
  for (id in objs) {
    count++;
    obj = objs[id];
    r = recs[id];
    if (r === undefined) {
      __appear(id, player ? "player" : obj.type, obj, round, d);
      continue;
    }
    r.seen = round;
    fs = r.fields;
    rv = r.v;
    pq = r.pq;
    f = null;
    if (pre) { m = 0; na = 0; plain = fs.length <= 6; }
    for (n = 0; n < fs.length; n++) {
      x = obj[fs[n]];
      if (x === undefined || (typeof x === "number" && (x !== x || x === Infinity || x === -Infinity))) x = null;
      else if ((c = pq[n]) !== 0 && typeof x === "number") x = c > 0 ? Math.round(x * c) / c : Math.round(x / -c) * -c; // __quant, inlined
      if (x !== rv[n]) {
        // The type check, inlined for the common cases: see __ok.
        if (x !== null && (t = r.ty[n]) !== typeof x && !(t === "integer" && typeof x === "number" && x % 1 === 0) &&
          !__ok(t, x, r.type, fs[n])) continue;
        rv[n] = x;
        r.fr[n] = round;
        if (f === null) f = {};
        f[fs[n]] = x;
        if (pre) {
          if (typeof x !== "number") plain = false;
          else { m |= 1 << (n + 1); a[na++] = x; a[na++] = pq[n]; }
        }
      }
    }
    if (f !== null) {
      __js.push(change, { id: id, f: f });
      __js.push(cr, r);
      if (pre) {
        if (!plain) __js.push(d.slow, change.length - 1);
        else if (na === 2) cchg(r.h, m, a[0], a[1]);
        else if (na === 4) cchg(r.h, m, a[0], a[1], a[2], a[3]);
        else cchg.apply(null, [r.h, m].concat(a.slice(0, na)));
      }
    }
  }
  return count;
}

// __advance moves the records to a new round and returns its delta.
function __advance(round, pre) {
  var d = __delta(), id;
  d.pre = !!pre;
  var seen = __track(__inst.players, true, round, d) + __track(__inst.entities, false, round, d);
  if (__nrecs > seen) {
    for (id in __recs) {
      if (__recs[id].seen !== round) {
        __tombs[id] = { a: __recs[id].a, r: round, h: __recs[id].h };
        __ntombs++;
        __js.push(d.gh, __recs[id].h);
        delete __recs[id];
        __nrecs--;
        __js.push(d.gone, id);
      }
    }
  }
  return d;
}

// __since is the merged delta for a viewer that last received round vr.
function __since(vr) {
  var d = __delta(), id, n;
  for (id in __recs) {
    var r = __recs[id];
    if (r.a > vr) {
      __js.push(d.appear, { id: id, type: r.type, f: __object(r.fields, r.v) });
      __js.push(d.ar, r);
      continue;
    }
    var f = null;
    for (n = 0; n < r.fields.length; n++) if (r.fr[n] > vr) (f = f || {})[r.fields[n]] = r.v[n];
    if (f) { __js.push(d.change, { id: id, f: f }); __js.push(d.cr, r); }
  }
  if (vr >= 0) {
    for (id in __tombs) if (__tombs[id].a <= vr && __tombs[id].r > vr) { __js.push(d.gone, id); __js.push(d.gh, __tombs[id].h); }
  }
  return d;
}

// __refit maps a record made by older code onto this code's field lists.
function __refit(r) {
  var fields = __fieldsOf(r.type), v = new Array(fields.length), fr = new Array(fields.length);
  for (var n = 0; n < fields.length; n++) {
    var k = r.fields.indexOf(fields[n]);
    v[n] = k >= 0 ? r.v[k] : undefined; // a new field: sent on the next round
    fr[n] = k >= 0 ? r.fr[k] : r.a;
  }
  r.fields = fields;
  r.ty = __typesOf(r.type);
  r.pq = __precisionsOf(r.type);
  r.v = v;
  r.fr = fr;
}

// __switchMode carries what each viewer knows over when a reload adds or
// removes the visibility hook, so nothing is lost either way.
function __switchMode() {
  var vid, v, id;
  for (vid in __viewers) {
    v = __viewers[vid];
    if (__R.player.visible) {
      // It knows what had appeared by its round, gone things included (they
      // are told gone at its next update).
      var known = {};
      if (v.round >= 0) {
        for (id in __recs) if (__recs[id].a <= v.round) known[id] = __recs[id].h;
        for (id in __tombs) if (__tombs[id].a <= v.round && __tombs[id].r > v.round) known[id] = __tombs[id].h;
      }
      if (v.stale) { // switched twice before its next update
        for (id in v.stale) known[id] = v.stale[id];
        delete v.stale;
      }
      v.known = known;
      v.nk = __js.keys(known).length;
    } else {
      // It sees everything now: it starts over with all of it, and is told
      // at its next update what it knew that no longer exists.
      v.round = -1;
      v.stale = v.known;
      v.known = {};
      v.nk = 0;
    }
  }
}

// __prune drops the tombstones no viewer can still need.
function __prune() {
  if (!__ntombs) return;
  var min = Infinity;
  for (var vid in __viewers) if (__viewers[vid].round >= 0 && __viewers[vid].round < min) min = __viewers[vid].round;
  for (var id in __tombs) {
    if (__tombs[id].r <= min) { delete __tombs[id]; __ntombs--; }
  }
}

function __sendShared(ready, compact, prev, round, d) {
  var body, cbody, out = [], inStep = 0; // the round's delta, encoded once per format when needed
  var viewers = __viewers, players = __inst.players;
  for (var i = 0; i < ready.length; i++) {
    var vid = ready[i], v = viewers[vid], c = !!(compact && compact[i]);
    if (!v || !players[vid]) continue;
    var b, src = d, pf = __pp.length ? __private(v, players[vid], v.round < 0) : null;
    if (v.round === prev) {
      if (c) b = cbody === undefined ? (cbody = __cbody(d)) : cbody;
      else b = body === undefined ? (body = __body(d)) : body;
      if (b && !pf) inStep++;
    } else {
      var m = src = __since(v.round);
      if (v.stale) {
        for (var sid in v.stale) if (!__recs[sid]) { __js.push(m.gone, sid); __js.push(m.gh, v.stale[sid]); }
        delete v.stale;
      }
      b = c ? __cbody(m) : __body(m);
      if (b && !pf) __count(m, 1);
    }
    if (pf) { // this viewer's own private fields ride with its delta
      src = { appear: src.appear, change: src.change.concat([{ id: vid, f: pf }]), gone: src.gone, ar: src.ar, cr: src.cr.concat([__privRec]), gh: src.gh };
      b = c ? __cbody(src) : __body(src);
      __count(src, 1);
    }
    v.round = round;
    if (b) __js.push2(out, vid, c ? [++v.seq, b] : '{"t":"update","seq":' + (++v.seq) + ',"time":' + __now + b);
  }
  if (inStep) __count(d, inStep);
  return out;
}

// With a visibility hook every viewer gets its own delta: what it sees now
// against the set of things it knows (v.known: id -> handle) and its round.
function __sendVisible(ready, compact, round) {
  var out = [], visible = __R.player.visible, recs = __recs, players = __inst.players, entities = __inst.entities;
  // The things, listed once for all viewers: for…in is slow in goja.
  var ids = [], rs = [], objs = [], id, k;
  for (id in recs) {
    __js.push(ids, id);
    __js.push(rs, recs[id]);
    __js.push(objs, recs[id].type === "player" ? players[id] : entities[id]);
  }
  var failed = false;
  function sees(me, obj) {
    try { return visible(__inst, me, obj); } catch (e) {
      // Once a round; it hides the thing, which is safe, so it does not
      // count towards closing an instance whose ticks keep throwing.
      if (!failed) __hookErr("visible", e, false);
      failed = true;
      return false;
    }
  }
  for (var i = 0; i < ready.length; i++) {
    var vid = ready[i], v = __viewers[vid], me = players[vid];
    if (!v || !me) continue;
    // nk counts the ids in known, hits those still in the records: when they
    // differ, some known thing went, and only then is known walked.
    var known = v.known, nk = v.nk || 0, hits = 0, vr = v.round, d = __delta(), n;
    for (k = 0; k < ids.length; k++) {
      var r = rs[k];
      id = ids[k];
      if (!sees(me, objs[k])) {
        if (known[id]) { __js.push(d.gone, id); __js.push(d.gh, known[id]); delete known[id]; nk--; }
        continue;
      }
      hits++;
      if (!known[id]) {
        __js.push(d.appear, { id: id, type: r.type, f: __object(r.fields, r.v) });
        __js.push(d.ar, r);
        known[id] = r.h;
        nk++;
        continue;
      }
      var f = null;
      for (n = 0; n < r.fields.length; n++) if (r.fr[n] > vr) (f = f || {})[r.fields[n]] = r.v[n];
      if (f) { __js.push(d.change, { id: id, f: f }); __js.push(d.cr, r); }
    }
    if (nk > hits) {
      for (id in known) if (!recs[id]) { __js.push(d.gone, id); __js.push(d.gh, known[id]); delete known[id]; nk--; }
    }
    if (__pp.length) {
      var pf = __private(v, me, vr < 0);
      if (pf) { __js.push(d.change, { id: vid, f: pf }); __js.push(d.cr, __privRec); }
    }
    v.nk = nk;
    v.round = round;
    var c = !!(compact && compact[i]), body = c ? __cbody(d) : __body(d);
    if (body) {
      __count(d, 1);
      __js.push2(out, vid, c ? [++v.seq, body] : '{"t":"update","seq":' + (++v.seq) + ',"time":' + __now + body);
    }
  }
  return out;
}

// The compact encoding of an update (docs/protocol.md): types and fields
// are numbered by the tables of __tables, sent once in the welcome; a thing
// is its handle (assigned when its record starts, its id sent once in its
// appear); numbers go as varints at their precision. Go frames a body with
// the viewer's seq and time.
var __types = [], __tix = {}; // type names by number, and back: see __tables
var __nextHandle = 0;
// __privRec stands for a viewer's own private fields in a change: handle 0.
var __privRec = { h: 0, fields: __pp, ty: __ty["player!"], pq: __pq["player!"] };
var __preVals = []; // __track's values of one change, for __cchg
// The bytes are written by Go (see compactWriter): __cu(n...) varints,
// __cbyte(b) a byte, __cnum(x, q) a number, __cstr(s) a string,
// __cnums(h, mask, x, q, ...) a handle (if h >= 0), a one-byte mask and
// numbers, and __cend() ends the body and returns its number for Go to
// find it by. __cchg(h, mask, x, q, ...) writes a change as __cnums does
// but aside, for the round's body, and __cpre(n) puts the count of those
// and n more there, then them.
// __tables is the JSON of the field tables: [{type, fields: [{name, type, q}]}],
// the player first with its private fields; entity types sorted, then those
// of things older code left that this code no longer declares (no fields).
function __tables() {
  function table(names, decl) {
    return names.map(function (k) {
      var f = decl[k], o = { name: k, type: __ftype(f) }, q = __fprec(f);
      if (q) o.q = q;
      return o;
    });
  }
  __types = ["player"].concat(__js.keys(__R.entities).sort());
  var extra = {}, id;
  if (__inst) for (id in __inst.entities) if (!__R.entities[__inst.entities[id].type]) extra[__inst.entities[id].type] = true;
  for (id in __recs) if (__recs[id].type !== "player" && !__R.entities[__recs[id].type]) extra[__recs[id].type] = true;
  __types = __types.concat(__js.keys(extra).sort());
  __tix = {};
  __types.forEach(function (t, n) { __tix[t] = n; });
  return __js.stringify(__types.map(function (t, n) {
    if (n === 0) return { type: t, fields: table(__pf, __R.player.fields), private: table(__pp, __R.player.fields) };
    return { type: t, fields: __R.entities[t] ? table(__ef[t], __R.entities[t].fields) : [] };
  }));
}
__tables();

// __cbody encodes a delta compactly, null when it is empty: the appears
// (handle, type number, id, fields), the changes (handle, fields), the
// gones (handles), each list after its length. It and its helpers keep to
// closure variables: in goja a global costs a map lookup at every use.
var __cbody = (function () {
  var has = [], nums = [], cu = __cu, cbyte = __cbyte, cnum = __cnum, cnums = __cnums, cstr = __cstr, cend = __cend, cpre = __cpre;

  // mask writes which fields k have has[k] === want as a bit mask, bit k + 1
  // for field k and bit 0 the flag, 7 bits a byte, the high bit set on
  // every byte but the last.
  function mask(nf, want, flag) {
    var last = 0, k, j, b = flag ? 1 : 0;
    for (k = nf - 1; k >= 0; k--) if (has[k] === want) { last = k + 1; break; }
    for (j = 1; j <= last; j++) {
      if (j % 7 === 0) { cbyte(b | 128); b = 0; }
      if (has[j - 1] === want) b |= 1 << (j % 7);
    }
    cbyte(b);
  }

  // fields writes the fields of f (a name -> value object) by record r's
  // table, after the handle h (none when h < 0): the mask of those with a
  // value (its flag: some are null), their values in table order, then the
  // mask of those that are null. A field f lacks, or whose value is not of
  // its type, is left out. The common case, a few numbers and no null, is
  // one call into Go (cnums): each call costs more than the bytes.
  function fields(r, f, h) {
    var fs = r.fields, ty = r.ty, pq = r.pq, nf = fs.length, k, x, t, nulls = false, plain = nf <= 6, m = 0, n = 0, a = nums;
    for (k = 0; k < nf; k++) {
      x = f[fs[k]];
      if (x === null) { has[k] = 2; nulls = true; continue; }
      t = ty[k];
      if (x !== undefined && (t === "number" || t === "integer" ? typeof x === "number" : typeof x === t)) {
        has[k] = 1;
        if (typeof x !== "number") plain = false;
        m |= 1 << (k + 1);
        a[n++] = x;
        a[n++] = pq[k];
      } else has[k] = 0;
    }
    if (plain && !nulls) {
      switch (n) {
        case 0: cnums(h, m); break;
        case 2: cnums(h, m, a[0], a[1]); break;
        case 4: cnums(h, m, a[0], a[1], a[2], a[3]); break;
        case 6: cnums(h, m, a[0], a[1], a[2], a[3], a[4], a[5]); break;
        default: cnums.apply(null, [h, m].concat(a.slice(0, n)));
      }
      return;
    }
    if (h >= 0) cu(h);
    mask(nf, 1, nulls);
    for (k = 0; k < nf; k++) {
      if (has[k] !== 1) continue;
      x = f[fs[k]];
      t = ty[k];
      if (t === "string") cstr(x);
      else if (t === "boolean") cbyte(x ? 1 : 0);
      else cnum(x, pq[k]);
    }
    if (nulls) mask(nf, 2, false);
  }

  return function (d) {
    var appear = d.appear, change = d.change, gone = d.gone, i, r;
    if (!appear.length && !change.length && !gone.length) return null;
    cu(appear.length);
    for (i = 0; i < appear.length; i++) {
      r = d.ar[i];
      cu(r.h, __tix[r.type] || 0);
      cstr(appear[i].id);
      fields(r, appear[i].f, -1);
    }
    var cr = d.cr, k;
    if (d.pre) { // the plain changes are written already; the others follow them
      cpre(d.slow.length);
      for (k = 0; k < d.slow.length; k++) { i = d.slow[k]; fields(cr[i], change[i].f, cr[i].h); }
    } else {
      cu(change.length);
      for (i = 0; i < change.length; i++) fields(cr[i], change[i].f, cr[i].h);
    }
    cu(gone.length);
    for (i = 0; i < gone.length; i++) cu(d.gh[i]);
    return cend();
  };
})();

// __body encodes a delta without its seq: ',"appear":[...],...}'.
function __body(d) {
  var m = {};
  if (d.appear.length) m.appear = d.appear;
  if (d.change.length) m.change = d.change;
  if (d.gone.length) m.gone = d.gone;
  var s = __js.stringify(m);
  return s.length > 2 ? "," + s.slice(1) : null;
}

function __count(d, times) {
  __counts[0] += d.appear.length * times;
  __counts[1] += d.change.length * times;
  __counts[2] += d.gone.length * times;
}

function __sizes() {
  return [__js.keys(__inst.players).length, __js.keys(__inst.entities).length];
}

// __takeCounts returns [appeared, changed, gone] since the last call.
function __takeCounts() {
  var c = __counts;
  __counts = [0, 0, 0];
  return c;
}

// __snapshot is what a snapshot line records: serialise's value, or the state.
function __snapshot() {
  var v = __R.instance.serialise ? __R.instance.serialise(__inst) : __inst.state;
  var s = __js.stringify(v);
  return s === undefined ? "null" : s;
}

// __inspect is what the dev playground shows of the instance (JSON, see
// Inspection in inspect.go): its state, players and entities as they are,
// each part encoded alone so that one JSON cannot hold spoils none of the
// others, and, when player is not "", what that player's viewer was last
// sent. It changes nothing.
function __inspect(player) {
  function enc(x) {
    try {
      var s = __js.stringify(x);
      return s === undefined ? "null" : s;
    } catch (e) {
      return __js.stringify({ unreadable: String(e) });
    }
  }
  var s = '{"state":' + enc(__inst.state) + ',"players":' + enc(__inst.players) + ',"entities":' + enc(__inst.entities);
  if (player !== "") s += ',"view":' + enc(__viewOf(player));
  return s + "}";
}

// __viewOf is what viewer pid knows: the things it was told of (with a
// visibility hook, those in its known set; without, all that had appeared
// by the round it last received) with their values of the last send round,
// and its own private fields as last sent; null when it has no viewer.
function __viewOf(pid) {
  var v = Object.prototype.hasOwnProperty.call(__viewers, pid) ? __viewers[pid] : null;
  if (!v) return null;
  var things = {}, id, r, n;
  for (id in __recs) {
    r = __recs[id];
    if (__R.player.visible ? !(v.known && v.known[id]) : !(v.round >= 0 && r.a <= v.round)) continue;
    things[id] = { type: r.type, f: __object(r.fields, r.v) };
  }
  var priv = null;
  if (v.pv) {
    priv = {};
    for (n = 0; n < __pp.length; n++) priv[__pp[n]] = n in v.pv ? v.pv[n] : null;
  }
  return { round: v.round, behind: v.round < 0 ? __round : __round - v.round, things: things, "private": priv };
}
