// The move command: the page's arrow keys set the player's stick. dx and dy
// are already checked against args.json (numbers from -1 to 1); the tick
// moves the player by them.
export default function run(instance{{ts ": Instance"}}, player{{ts ": Player"}}, args{{ts ": Args<\"move\">"}}) {
  player.vx = args.dx;
  player.vy = args.dy;
}
