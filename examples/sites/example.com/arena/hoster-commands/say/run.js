// Chat: everyone in the instance hears it, at most once a second per player.
export default function run(instance, player, args) {
  const now = instance.now();
  if (player.lastSaid !== undefined && now - player.lastSaid < 1000) {
    instance.refuse("wait a second between messages");
  }
  player.lastSaid = now;
  instance.broadcast("chat", { from: player.name, text: args.text });
  instance.log(player.name + ": " + args.text);
}
