export default function create() {}
