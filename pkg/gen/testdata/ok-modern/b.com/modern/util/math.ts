export class Vec { x = 0; y = 0; constructor(x: number, y: number) { this.x = x; this.y = y; } len(): number { return Math.hypot(this.x, this.y) ** 1; } }
export const pick = <T,>(o: { a?: { b?: T } }): T | undefined => o?.a?.b;
