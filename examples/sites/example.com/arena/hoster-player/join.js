import { SIZE } from "../lib/arena.js";

// A player arrives; params are the socket URL's query (?name=...). Players
// start near the middle, within sight of each other, so they meet.
export default function join(instance, player, params) {
  player.name = String(params.name || "player").slice(0, 16);
  player.x = Math.round(SIZE / 2 - 10 + Math.random() * 20);
  player.y = Math.round(SIZE / 2 - 10 + Math.random() * 20);
  player.score = 0;
  player.vx = 0;
  player.vy = 0;
  instance.log("joined", player.id, player.name);
  instance.send(player, "hello", { text: "Welcome, " + player.name + "! Collect the coins." });
}
