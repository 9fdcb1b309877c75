export default function tick(instance, dt) {
  let x = 1;
  x = = 2;
}
