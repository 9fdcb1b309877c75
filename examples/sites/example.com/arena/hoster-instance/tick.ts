import { SIZE, SPEED, clamp, distance, randomSpot } from "../lib/arena.js";

interface Mover { id: string; x: number; y: number; score: number; vx?: number; vy?: number }

// Every tick: move each player by its stick, pick up the coins it touches.
export default function tick(instance: Instance, dt: number): void {
  for (const id in instance.players) {
    const p: Mover = instance.players[id];
    const vx = p.vx ?? 0, vy = p.vy ?? 0;
    if (vx === 0 && vy === 0) continue;
    p.x = clamp(p.x + vx * SPEED * dt, 0, SIZE);
    p.y = clamp(p.y + vy * SPEED * dt, 0, SIZE);
    for (const cid in instance.entities) {
      const coin = instance.entities[cid];
      if (coin.type === "coin" && distance(p, coin) < 3) {
        p.score += coin.value;
        instance.state.collected++;
        Object.assign(coin, randomSpot());
      }
    }
  }
}
