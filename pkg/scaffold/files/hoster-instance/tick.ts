import { SIZE, SPEED, clamp } from "../lib/board";

// Every tick (20 a second, hoster-game.json's tickRate): each player moves by
// its stick, dt seconds' worth, and stays on the board.
export default function tick(instance{{ts ": Instance"}}, dt{{ts ": number"}}) {
  for (const id in instance.players) {
    const p = instance.players[id];
    if (p.vx === 0 && p.vy === 0) continue;
    p.x = clamp(p.x + p.vx * SPEED * dt, 0, SIZE);
    p.y = clamp(p.y + p.vy * SPEED * dt, 0, SIZE);
  }
}
