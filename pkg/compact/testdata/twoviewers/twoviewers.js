// twoViewers connects two players to a game with the browser library, one
// on the compact protocol and one on JSON (its WebSocket asks for no
// subprotocol), records what each knows after every update, and after the
// given seconds reports whether both knew the same at every time both had
// an update (each one's own private field "secret" aside), and the
// library's cost per update (its message handler: decoding and applying),
// timed live and by replaying each viewer's frames many times into a
// connection whose WebSocket is a stand-in (timers too coarse to time one
// update, as Chromium's, then still give a figure).
// It runs in Node (the test in pkg/runtime) and in Chromium (test/integration).
function twoViewers(lib, url, WS, seconds, report) {
  const conns = [], frames = [[], []], hist = [new Map(), new Map()], cost = [0, 0], costs = [[], []], updates = [0, 0], protocols = ["", ""], problems = [];
  function header(buf) { // the compact update's time step: byte 1, seq, zigzag time step
    const b = new Uint8Array(buf);
    let pos = 1, v = 0, mul = 1, c;
    do { c = b[pos++]; } while (c & 128);
    do { c = b[pos++]; v += (c & 127) * mul; mul *= 128; } while (c & 128);
    return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
  }
  function snapshot(g) {
    const out = {};
    for (const set of [g.players, g.entities]) {
      for (const id of Object.keys(set).sort()) {
        const o = Object.assign({}, set[id]);
        if (id === g.me ? !("secret" in o) : "secret" in o) problems.push("secret of " + id + " wrong for " + g.me);
        delete o.secret;
        out[id] = o;
      }
    }
    return JSON.stringify(out);
  }
  function recorder(k, plain) {
    return class extends WS {
      constructor(u, p) { if (plain) super(u); else super(u, p); this.time = 0; }
      get onmessage() { return super.onmessage; }
      set onmessage(fn) {
        super.onmessage = (ev) => {
          frames[k].push(ev.data);
          const t0 = performance.now();
          fn(ev);
          const spent = performance.now() - t0;
          let time = null;
          if (typeof ev.data === "string") {
            const m = JSON.parse(ev.data);
            if (m.t === "update") time = m.time;
            if (m.t === "welcome") protocols[k] = this.protocol;
          } else {
            time = this.time += header(ev.data);
          }
          if (time === null) return;
          cost[k] += spent;
          costs[k].push(spent);
          updates[k]++;
          hist[k].set(time, snapshot(conns[k]));
        };
      }
    };
  }
  conns.push(lib.connect(url, { name: "compact" }, { WebSocket: recorder(0, false) }));
  conns.push(lib.connect(url, { name: "json" }, { WebSocket: recorder(1, true) }));
  function replay(k, times) {
    let fake = null;
    class Stand { constructor() { fake = this; this.readyState = 1; } close() {} send() {} }
    const g = lib.connect(url || "ws://replay.invalid/game", {}, { WebSocket: Stand });
    let n = 0;
    const t0 = performance.now();
    for (let r = 0; r < times; r++) {
      for (const d of frames[k]) {
        fake.onmessage({ data: d });
        if (typeof d !== "string" || d.startsWith('{"t":"update"')) n++;
      }
    }
    const ms = (performance.now() - t0) / Math.max(n, 1);
    const last = Array.from(hist[k].values()).pop();
    if (snapshot(g) !== last) problems.push("viewer " + k + " replayed knows " + snapshot(g) + " but knew " + last);
    g.close();
    return ms;
  }
  setTimeout(() => {
    let compared = 0;
    for (const [time, s] of hist[0]) {
      if (!hist[1].has(time)) continue;
      compared++;
      if (hist[1].get(time) !== s && problems.length < 5) problems.push("at " + time + " compact knew " + s + " but JSON " + hist[1].get(time));
    }
    conns.forEach((g) => g.close());
    const replayMs = [replay(0, 1), replay(1, 1), replay(0, 20), replay(1, 20)].slice(2); // warmed up first
    report({ replayMs, compared, problems, protocols, updates,
      msPerUpdate: [cost[0] / Math.max(updates[0], 1), cost[1] / Math.max(updates[1], 1)],
      msMedian: costs.map((c) => c.sort((a, b) => a - b)[c.length >> 1] || 0),
      last: hist.map((h) => Array.from(h.values()).pop() || "") });
  }, seconds * 1000);
}
if (typeof module === "object" && module.exports) module.exports = twoViewers;
