export default function run(instance, player, args) {
  instance.log(player.name + ": " + args.text);
}
