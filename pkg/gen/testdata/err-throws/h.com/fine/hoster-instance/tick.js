export default function tick() {}
