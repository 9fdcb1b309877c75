export default function (instance, entity, dt) {}
