// Every kind of change, deterministic: mobs wander (precision 0.0001),
// players' fields go through floats, nulls and big integers, gems come and go.
export default function (i, dt) {
  const n = (i.state.n = (i.state.n || 0) + 1);
  for (const id in i.entities) {
    const e = i.entities[id];
    if (e.type === "mob") { e.x += Math.sin(n + e.y) * 0.37; e.y -= 0.01 * (n % 3); }
    else if (n % 20 === 15) i.remove(id);
  }
  if (n % 20 === 5) i.spawn("gem", { v: n / 3, tag: "é😀" + n });
  for (const id in i.players) {
    const p = i.players[id];
    p.x = n / 7; p.y = -n * 1.5; p.alive = n % 4 < 2; p.hp = n % 5 === 0 ? 2 ** 40 + n : n;
    p.note = n % 3 === 0 ? NaN : n % 3 === 1 ? 0.1 * n : 0.5;
    p.secret = n * 2 + p.name.length;
    p.z1 = n % 2 ? n * 0.25 : undefined; p.z2 = n % 3 === 0; // fields past the first byte of a mask
  }
}
