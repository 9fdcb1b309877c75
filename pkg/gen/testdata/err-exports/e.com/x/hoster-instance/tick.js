export function tick(instance, dt) {}
