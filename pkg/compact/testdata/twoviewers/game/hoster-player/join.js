export default function (i, p, a) { p.x = 0; p.y = 0; p.name = a.name || "anon"; p.alive = true; p.hp = 3; }
