import { startRounds } from "../lib/rounds.js";

// After a code reload: rebuild the state from what serialise returned, and
// start the round timer again (the old code's timers are gone).
export default function restore(instance, saved) {
  startRounds(instance);
  instance.state = { round: saved.round, collected: saved.collected };
  for (const id in saved.players) {
    const p = instance.players[id];
    if (p) Object.assign(p, saved.players[id]);
  }
}
