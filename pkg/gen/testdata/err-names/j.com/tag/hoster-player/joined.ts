export default function (instance, player) {}
