export default function run() {}
