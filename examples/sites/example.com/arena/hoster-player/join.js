import { randomSpot } from "../lib/arena.js";

// A player arrives; params are the socket URL's query (?name=...).
export default function join(instance, player, params) {
  const { x, y } = randomSpot();
  player.name = String(params.name || "player").slice(0, 16);
  player.x = x;
  player.y = y;
  player.score = 0;
  player.vx = 0;
  player.vy = 0;
  instance.log("joined", player.id, player.name);
}
