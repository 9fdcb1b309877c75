import { COINS, randomSpot } from "../lib/arena.js";
import { startRounds } from "../lib/rounds.js";

// A new instance: an empty round with coins scattered about, and a timer
// that ends each round.
export default function create(instance) {
  instance.state = { round: 1, collected: 0 };
  for (let i = 0; i < COINS; i++) {
    instance.spawn("coin", { ...randomSpot(), value: 1 });
  }
  startRounds(instance);
}
