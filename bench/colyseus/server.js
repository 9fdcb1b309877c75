// bench/load's game as a Colyseus room: the peer hoster-server is measured
// against (bench/vs-colyseus.sh). Same rules as the hoster game that
// bench/load writes: capacity 20, 50 wandering entities (each moves every
// fifth tick), tick 20 Hz, patches 10 Hz, a "move" message of {dx, dy} in
// [-1, 1]. With VISIBLE=1 each client sees only what is within 25 units of
// its own player (a StateView kept up to date before every patch), as the
// hoster game's visible.js does.
//
//   node server.js PORT        (prints "listening PORT" once it accepts)
"use strict";

const { Server, Room } = require("@colyseus/core");
const { WebSocketTransport } = require("@colyseus/ws-transport");
const { schema, t, StateView } = require("@colyseus/schema");

const CAPACITY = Number(process.env.CAPACITY || 20);
const ENTITIES = Number(process.env.ENTITIES || 50);
const TICK = Number(process.env.TICK || 20);
const SEND = Number(process.env.SEND || 10);
const VISIBLE = process.env.VISIBLE === "1";
const RANGE = 25;

const Thing = schema({ x: t.number(), y: t.number() }, "Thing");
const State = VISIBLE
  ? schema({ players: t.map(Thing).view(), mobs: t.map(Thing).view() }, "State")
  : schema({ players: t.map(Thing), mobs: t.map(Thing) }, "State");

function near(a, b) {
  return Math.abs(a.x - b.x) < RANGE && Math.abs(a.y - b.y) < RANGE;
}

class LoadRoom extends Room {
  onCreate() {
    this.maxClients = CAPACITY;
    this.state = new State();
    this.ticks = new Map(); // each mob's tick counter: the game's own, not sent
    for (let k = 0; k < ENTITIES; k++) {
      const m = new Thing();
      m.x = Math.round(Math.random() * 100);
      m.y = Math.round(Math.random() * 100);
      const id = "m" + k;
      this.ticks.set(id, k);
      this.state.mobs.set(id, m);
    }
    this.onMessage("move", (client, a) => {
      const p = this.state.players.get(client.sessionId);
      if (!p || !a || typeof a.dx !== "number" || typeof a.dy !== "number" ||
          a.dx < -1 || a.dx > 1 || a.dy < -1 || a.dy > 1) {
        return;
      }
      p.x += a.dx;
      p.y += a.dy;
    });
    this.setSimulationInterval(() => {
      for (const [id, m] of this.state.mobs) {
        const n = this.ticks.get(id) + 1;
        this.ticks.set(id, n);
        if (n % 5 === 0) m.x = (m.x + 1) % 100;
      }
    }, 1000 / TICK);
    this.setPatchRate(1000 / SEND);
  }

  onJoin(client) {
    const p = new Thing();
    p.x = Math.random() * 100;
    p.y = Math.random() * 100;
    this.state.players.set(client.sessionId, p);
    if (VISIBLE) client.view = new StateView();
  }

  onLeave(client) {
    this.state.players.delete(client.sessionId);
  }

  // The visibility rule, applied to every client before each patch.
  onBeforePatch(state) {
    if (!VISIBLE) return;
    for (const client of this.clients) {
      const me = state.players.get(client.sessionId);
      if (!me || !client.view) continue;
      for (const map of [state.players, state.mobs]) {
        for (const thing of map.values()) {
          const see = near(me, thing);
          if (see !== client.view.has(thing)) {
            if (see) client.view.add(thing); else client.view.remove(thing);
          }
        }
      }
    }
  }
}

const port = Number(process.argv[2] || 2567);
const server = new Server({ transport: new WebSocketTransport(), greet: false });
server.define("load", LoadRoom);
server.listen(port, "127.0.0.1").then(() => console.log("listening " + port));
