export default function (instance, player, args) {}
