export default function run(instance, player) { player.pings = (player.pings || 0) + 1; }
