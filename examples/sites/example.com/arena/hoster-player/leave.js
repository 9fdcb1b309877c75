export default function leave(instance, player) {
  instance.log("left", player.id, "with", player.score, "points");
}
