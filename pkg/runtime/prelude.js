// The runtime's side of an instance, run once in each instance's goja
// runtime after the game's hoster.server.js. Game state never leaves
// JavaScript: Go calls __tick once per tick with every queued event, and
// __send once per send round, which returns finished update messages.
var __R = __hoster;
var __inst = null;
var __viewers = {}; // player id -> {known: {thing id -> [field values]}, seq}
var __now = 0;
var __nextEntity = 0;
var __pf = Object.keys(__R.player.fields).sort();
var __ef = {};
Object.keys(__R.entities).forEach(function (t) { __ef[t] = Object.keys(__R.entities[t].fields).sort(); });
var __counts = [0, 0, 0]; // appeared, changed, gone, since the last __takeCounts

function __make(id) {
  __inst = {
    id: id,
    state: {},
    players: {},
    entities: {},
    spawn: function (type, fields) {
      if (!Object.prototype.hasOwnProperty.call(__R.entities, type)) {
        throw new Error("spawn: unknown entity type " + JSON.stringify(type));
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
    log: function () { __log(Array.prototype.map.call(arguments, String).join(" ")); }
  };
}

function __init(id) {
  __make(id);
  if (__R.instance.create) __R.instance.create(__inst);
}

// __export hands a live instance to new code: its players, entities,
// viewers' last-sent state, and either its serialised state (when this code
// has a serialise hook) or its state object as it is.
function __export() {
  var out = { id: __inst.id, players: __inst.players, entities: __inst.entities, viewers: __viewers, group: __group, nextEntity: __nextEntity };
  if (__R.instance.serialise) out.saved = __R.instance.serialise(__inst);
  else out.state = __inst.state;
  return JSON.stringify(out);
}

// __adopt takes over an instance exported by older code; restore rebuilds
// the state when this code has the hook and the old code serialised.
function __adopt(json) {
  var x = JSON.parse(json);
  __make(x.id);
  __inst.players = x.players;
  __inst.entities = x.entities;
  __viewers = x.viewers;
  __group = x.group;
  __nextEntity = x.nextEntity;
  if ("saved" in x && __R.instance.restore) {
    __inst.state = {};
    __R.instance.restore(__inst, x.saved);
  } else {
    __inst.state = "state" in x ? x.state : (x.saved !== undefined ? x.saved : {});
  }
}

// __tick applies the queued events in order, then ticks (when dt > 0).
// events: JSON [["join", id, params] | ["leave", id] | ["resume", id] | ["cmd", id, name, args]]
function __tick(dt, now, events) {
  __now = now;
  var evs = JSON.parse(events);
  for (var i = 0; i < evs.length; i++) {
    var ev = evs[i], p;
    if (ev[0] === "join") {
      p = { id: ev[1] };
      __inst.players[p.id] = p;
      __viewers[p.id] = { known: {}, seq: 0 }; // out of step until its first update
      if (__R.player.join) __R.player.join(__inst, p, ev[2]);
    } else if (ev[0] === "leave") {
      p = __inst.players[ev[1]];
      if (p && __R.player.leave) __R.player.leave(__inst, p);
      delete __inst.players[ev[1]];
      delete __viewers[ev[1]];
    } else if (ev[0] === "resume") {
      if (__viewers[ev[1]]) __viewers[ev[1]].known = {};
    } else if (ev[0] === "cmd") {
      p = __inst.players[ev[1]];
      if (p) __R.commands[ev[2]].run(__inst, p, ev[3]);
    }
  }
  if (dt > 0) {
    if (__R.instance.tick) __R.instance.tick(__inst, dt);
    var ids = Object.keys(__inst.entities);
    for (var j = 0; j < ids.length; j++) {
      var e = __inst.entities[ids[j]];
      if (!e) continue;
      var t = __R.entities[e.type];
      if (t && t.tick) t.tick(__inst, e, dt);
    }
  }
}

function __values(obj, fields) {
  var v = new Array(fields.length);
  for (var i = 0; i < fields.length; i++) {
    var x = obj[fields[i]];
    v[i] = x === undefined || (typeof x === "number" && !isFinite(x)) ? null : x;
  }
  return v;
}

function __object(fields, values) {
  var o = {};
  for (var i = 0; i < fields.length; i++) o[fields[i]] = values[i];
  return o;
}

// __send computes, for each ready viewer, the delta against what it last
// received, and returns [viewer id, message, ...] for those with changes.
// A viewer not ready this round keeps its last-received state, so its next
// update merges everything it missed.
//
// Without a visibility hook every viewer sees everything, so viewers that
// are in step share one delta, computed and encoded once per round; only
// their seq differs. Known-state maps are never changed once built: a viewer
// that falls out of step just keeps a reference to the map it last received.
var __group = null; // the known state of the viewers in step (no visibility hook)

function __things() {
  var things = [], id;
  for (id in __inst.players) things.push([id, "player", __inst.players[id], __pf]);
  for (id in __inst.entities) {
    var e = __inst.entities[id];
    things.push([id, e.type, e, __ef[e.type] || []]);
  }
  for (var i = 0; i < things.length; i++) things[i].push(__values(things[i][2], things[i][3]));
  return things; // [id, type, object, fields, values]
}

// __delta compares what is seen now with known, and returns the lists and
// the new known map (known is left as it was).
function __delta(known, things, me) {
  var visible = me ? __R.player.visible : null;
  var next = {}, appear = [], change = [], gone = [];
  for (var k = 0; k < things.length; k++) {
    var th = things[k];
    if (visible && !visible(__inst, me, th[2])) continue;
    var cur = th[4], old = known[th[0]];
    next[th[0]] = cur;
    if (!old) {
      appear.push({ id: th[0], type: th[1], f: __object(th[3], cur) });
      continue;
    }
    var f = null;
    for (var n = 0; n < cur.length; n++) {
      if (old[n] !== cur[n]) (f = f || {})[th[3][n]] = cur[n];
    }
    if (f) change.push({ id: th[0], f: f });
  }
  for (var id in known) if (!(id in next)) gone.push(id);
  return { next: next, appear: appear, change: change, gone: gone };
}

// __body encodes a delta without its seq: ',"appear":[...],...}'.
function __body(d) {
  var m = {};
  if (d.appear.length) m.appear = d.appear;
  if (d.change.length) m.change = d.change;
  if (d.gone.length) m.gone = d.gone;
  var s = JSON.stringify(m);
  return s.length > 2 ? "," + s.slice(1) : null;
}

function __count(d, times) {
  __counts[0] += d.appear.length * times;
  __counts[1] += d.change.length * times;
  __counts[2] += d.gone.length * times;
}

function __send(ready) {
  var things = __things();
  var out = [];
  var shared = !__R.player.visible;
  var isReady = {};
  for (var r = 0; r < ready.length; r++) isReady[ready[r]] = true;
  var groupBefore = __group, group = null, groupBody = null, inStep = 0;
  if (shared) {
    if (groupBefore === null) groupBefore = {};
    group = __delta(groupBefore, things, null);
    groupBody = __body(group);
    // Viewers in step that are not ready this round fall out of step,
    // keeping the state they last received.
    for (var vid0 in __viewers) {
      var v0 = __viewers[vid0];
      if (v0.known === null && !isReady[vid0]) v0.known = groupBefore;
    }
    __group = group.next;
  }
  for (var i = 0; i < ready.length; i++) {
    var vid = ready[i], v = __viewers[vid], me = __inst.players[vid];
    if (!v || !me) continue;
    var body;
    if (shared && v.known === null) {
      body = groupBody; // in step: the shared delta
      if (body) inStep++;
    } else {
      var d = __delta(v.known || {}, things, shared ? null : me);
      body = __body(d);
      if (body) __count(d, 1);
      // After this update, a viewer without a visibility hook is in step.
      v.known = shared ? null : d.next;
    }
    if (body) out.push(vid, '{"t":"update","seq":' + (++v.seq) + body);
  }
  if (inStep) __count(group, inStep);
  return out;
}

function __sizes() {
  return [Object.keys(__inst.players).length, Object.keys(__inst.entities).length];
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
  var s = JSON.stringify(v);
  return s === undefined ? "null" : s;
}
