// The server's code: it imports a private helper and one the page shares.
import { nextRound } from "../lib/rounds";
import { SIZE } from "../lib/shared.js";

export default function create(instance: any) {
  instance.state.round = nextRound(0);
  instance.state.size = SIZE;
}
