// The runtime's side of an instance, run once in each instance's goja
// runtime after the game's hoster.server.js: glue. The instance object the
// hooks get (its methods queue what they ask of Go in __out), the hand-over
// to new code, a player's leave (which kick runs too), and the reading of
// what a hook threw. Go calls the hooks (dispatch.go), keeps the players' and
// entities' declared fields (records.go: __thing and __wrap make them) and
// runs the send rounds (round.go); __view tells Go of a viewer joining,
// leaving or starting over.
var __R = __hoster;
var __inst = null;
var __now = 0;
var __nextEntity = 0;
// __out collects what hooks asked of Go since Go last took it (__takeOut):
// ["err", player, command, message] an error frame for one player;
// ["herr", where, error text, ticking] a hook error to log (ticking: it was
// thrown by a tick, entity tick or timer);
// ["msg", player, frame] a message for one player, after the next update;
// ["kick", player, reason]; ["close", reason]; ["lock"]; ["unlock"].
var __out = [];

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

// __sees asks the visibility hook vis whether player me of instance inst
// sees each of things, into the bytes of seen (1: it does), in one call
// from Go: a call from JavaScript costs less. A hook that throws hides the
// thing; the first error is returned for Go to log. The try is entered
// again after a throw, not at every call.
function __sees(vis, inst, me, things, seen) {
  var out = __js.bytes(seen), n = things.length, k = 0, err;
  while (k < n) {
    try {
      for (; k < n; k++) out[k] = vis(inst, me, things[k]) ? 1 : 0;
    } catch (e) {
      out[k++] = 0;
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

function __make(id) {
  __inst = {
    id: id,
    state: {},
    players: __things(), // objects of their ids in order, kept in Go
    entities: __things(),
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
    after: __after, // timers are Go's (gametimers.go)
    every: __every,
    refuse: function (reason) { throw new __Refusal(reason === undefined ? "refused" : String(reason)); }
  };
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

// __caught records what a hook Go called threw (what: "join", "cmd",
// "disconnect", "reconnect", "tick", "entity <type> tick"): a refused join
// or command is answered with its reason and not logged; any other error
// is logged, and a command's player told it failed, a joining player
// turned away.
function __caught(what, e, id, name, ticking) {
  var refused = e instanceof __Refusal;
  if (what === "cmd") {
    __js.push(__out, ["err", id, name, refused ? e.reason : "command " + name + " failed"]);
    if (refused) return;
    what = "command " + name;
  } else if (what === "join" && refused) {
    __js.push(__out, ["kick", id, e.reason]);
    return;
  }
  __hookErr(what, e, ticking);
  if (what === "join") __js.push(__out, ["kick", id, "joining the game failed", 1011]);
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
