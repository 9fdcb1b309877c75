import { SIZE } from "../lib/board";

// A player arrives; params are the socket URL's query (?name=ada). Players
// start near the middle, within sight of each other.
export default function join(instance{{ts ": Instance"}}, player{{ts ": Player"}}, params{{ts ": Params"}}) {
  player.name = String(params.name || "player").slice(0, 16);
  player.x = SIZE / 2 - 10 + Math.random() * 20;
  player.y = SIZE / 2 - 10 + Math.random() * 20;
  player.vx = 0; // the stick the move command sets
  player.vy = 0;
  instance.log("joined", player.id, player.name);
}
