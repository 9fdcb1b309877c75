export default function (instance) {}
