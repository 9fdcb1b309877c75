import { ROUND } from "./arena.js";

// startRounds ends a round every ROUND seconds: everyone hears who leads.
// Timers do not survive a code reload by themselves, so restore calls this
// again.
export function startRounds(instance) {
  instance.every(ROUND, () => {
    let leader = null;
    for (const id in instance.players) {
      const p = instance.players[id];
      if (!leader || p.score > leader.score) leader = p;
    }
    instance.broadcast("round", { round: instance.state.round, leader: leader && leader.name });
    instance.state.round++;
  });
}
