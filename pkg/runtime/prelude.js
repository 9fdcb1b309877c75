// The runtime's side of an instance, run once in each instance's goja
// runtime after the game's hoster.server.js: the instance object the hooks
// get, its timers, and the order in which __tick applies the queued events
// and calls the hooks. The players and entities are things made in Go
// (__thing, __wrap: their declared fields live there, in records.go), and
// the send rounds are Go's (round.go); __view tells Go of a player's
// viewer joining, leaving or starting over.
var __R = __hoster;
var __inst = null;
var __now = 0;
var __nextEntity = 0;
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
  __js.push(__out, ["herr", where, __errText(e), !!ticking]);
}

// __errText is a hook's error as Go logs it: its stack, or what was thrown.
function __errText(e) {
  if (e instanceof __Refusal) return "instance.refuse called outside a command: " + e.reason;
  if (e && typeof e === "object" && typeof e.stack === "string") return e.stack;
  return "threw " + (function () { try { return __js.stringify(e); } catch (x) { return String(e); } })();
}

// __sees asks the visibility hook vis whether player me sees each of
// things, into the bytes of seen (1: it does), in one call from Go: a call
// from JavaScript costs less. A hook that throws hides the thing; the
// first error is returned for Go to log.
function __sees(vis, me, things, seen) {
  var out = __js.bytes(seen), err, k;
  for (k = 0; k < things.length; k++) {
    try { out[k] = vis(__inst, me, things[k]) ? 1 : 0; } catch (e) {
      out[k] = 0;
      if (err === undefined) err = __errText(e);
    }
  }
  return err;
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
      var e = __thing(type);
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

// __export hands a live instance to new code: its players, entities, and
// either its serialised state (when this code has a serialise hook) or its
// state object as it is. (What its viewers were sent stays in Go.)
function __export() {
  var out = { id: __inst.id, players: __inst.players, entities: __inst.entities, nextEntity: __nextEntity };
  if (__R.instance.serialise) out.saved = __R.instance.serialise(__inst);
  else out.state = __inst.state;
  return __js.stringify(out);
}

// __adopt takes over an instance exported by older code, its players and
// entities made things of this code's fields; restore rebuilds the state
// when this code has the hook and the old code serialised.
function __adopt(json, now) {
  var x = __js.parse(json), id;
  __now = now;
  __make(x.id);
  for (id in x.players) __inst.players[id] = __wrap("player", x.players[id]);
  for (id in x.entities) __inst.entities[id] = __wrap(String(x.entities[id].type), x.entities[id]);
  __nextEntity = x.nextEntity;
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
  __view("leave", id);
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
      p = __thing("player");
      p.id = ev[1];
      p.connected = true;
      __inst.players[p.id] = p;
      __view("join", p.id); // gets everything it sees first
      if (__R.player.join) {
        try { __R.player.join(__inst, p, ev[2]); } catch (e) {
          // A player whose join failed or was refused is not in the game.
          delete __inst.players[p.id];
          __view("leave", p.id);
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
      __view("resume", ev[1]); // it starts over
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

function __sizes() {
  return [__js.keys(__inst.players).length, __js.keys(__inst.entities).length];
}

// __snapshot is what a snapshot line records: serialise's value, or the state.
function __snapshot() {
  var v = __R.instance.serialise ? __R.instance.serialise(__inst) : __inst.state;
  var s = __js.stringify(v);
  return s === undefined ? "null" : s;
}

// __inspect is what the dev playground shows of the instance (JSON, see
// Inspection in inspect.go, which adds what a viewer was sent): its state,
// players and entities as they are, each part encoded alone so that one
// JSON cannot hold spoils none of the others. It changes nothing.
function __inspect() {
  function enc(x) {
    try {
      var s = __js.stringify(x);
      return s === undefined ? "null" : s;
    } catch (e) {
      return __js.stringify({ unreadable: String(e) });
    }
  }
  return '{"state":' + enc(__inst.state) + ',"players":' + enc(__inst.players) + ',"entities":' + enc(__inst.entities);
}
