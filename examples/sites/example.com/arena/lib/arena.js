// Shared helpers, imported by relative path from the hooks.
export const SIZE = 100;      // the arena is SIZE x SIZE units
export const SPEED = 30;      // units per second at full stick
export const VIEW = 40;       // how far a player sees
export const COINS = 12;
export const ROUND = 60;      // seconds a round lasts

export function clamp(v, lo, hi) {
  return Math.max(lo, Math.min(hi, v));
}

export function randomSpot() {
  return { x: Math.round(Math.random() * SIZE), y: Math.round(Math.random() * SIZE) };
}

export function distance(a, b) {
  return Math.hypot(a.x - b.x, a.y - b.y);
}
