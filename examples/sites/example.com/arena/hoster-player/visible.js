import { VIEW, distance } from "../lib/arena.js";

// Interest management: a player sees itself, and what is within VIEW.
export default function visible(instance, player, thing) {
  return thing.id === player.id || distance(player, thing) <= VIEW;
}
