// Server only: bundled into hoster.server.js, never served.
export const SECRET_SEED = 1234;
export function nextRound(round: number): number {
  return round + SECRET_SEED - 1233;
}
