export default function (i) { for (let k = 0; k < 50; k++) i.spawn("mob", { x: k, y: 100 - k }); }
