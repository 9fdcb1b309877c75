const table = null;
const first = table.rows;
export default function tick() { return first; }
