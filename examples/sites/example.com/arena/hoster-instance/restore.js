// After a code reload: rebuild the state from what serialise returned.
export default function restore(instance, saved) {
  instance.state = { round: saved.round, collected: saved.collected };
  for (const id in saved.players) {
    const p = instance.players[id];
    if (p) Object.assign(p, saved.players[id]);
  }
}
