import { COINS, randomSpot } from "../lib/arena.js";

// A new instance: an empty round with coins scattered about.
export default function create(instance) {
  instance.state = { round: 1, collected: 0 };
  for (let i = 0; i < COINS; i++) {
    instance.spawn("coin", { ...randomSpot(), value: 1 });
  }
}
