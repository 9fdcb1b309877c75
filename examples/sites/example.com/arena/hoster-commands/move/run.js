import { SIZE, clamp } from "../../lib/arena.js";

// Set the player's stick; a step is taken at once so even a single tap moves.
export default function run(instance, player, args) {
  player.vx = args.dx;
  player.vy = args.dy;
  player.x = clamp(player.x + args.dx, 0, SIZE);
  player.y = clamp(player.y + args.dy, 0, SIZE);
}
