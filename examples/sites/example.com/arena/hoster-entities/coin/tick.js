// Coins drift slowly, so the arena never stands still.
export default function tick(instance, coin, dt) {
  coin.x = (coin.x + dt * 0.5) % 100;
}
