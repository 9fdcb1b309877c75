// The board, shared by the hooks that import it (bundled into
// hoster.server.js; index.html draws the same SIZE at 5 pixels a unit).
export const SIZE = 100; // the board is SIZE x SIZE units
export const SPEED = 40; // units a second at full stick

export function clamp(v{{ts ": number"}}, lo{{ts ": number"}}, hi{{ts ": number"}}){{ts ": number"}} {
  return Math.max(lo, Math.min(hi, v));
}
