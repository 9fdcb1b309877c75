import { Vec, pick } from "../util/math";
export default function join(instance: any, player: any, params: Record<string, string>) {
  const { tag = "none", ...rest } = params;
  const v = new Vec(3, 4);
  player.hp = v.len() + Object.keys({ ...rest }).length;
  player.tag = pick({ a: { b: tag } }) ?? "x";
  const gen = function* () { yield 1; yield 2; };
  for (const n of gen()) player.hp += n;
  (async () => { await null; player.late = true; })();
}
