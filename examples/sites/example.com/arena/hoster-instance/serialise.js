// What a snapshot records, and what survives a code reload.
export default function serialise(instance) {
  const players = {};
  for (const id in instance.players) {
    const { x, y, score, name } = instance.players[id];
    players[id] = { x, y, score, name };
  }
  return { round: instance.state.round, collected: instance.state.collected, players };
}
