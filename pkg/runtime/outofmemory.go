package runtime

// A game over its memory budget, wherever it runs (its worker on a server,
// hoster dev's one process): the close code of DESIGN.md its players get,
// and the reason they are given.
const (
	CodeOutOfMemory   = 4003
	ReasonOutOfMemory = "the game ran out of its memory budget"
)

// EndOutOfMemory ends domain/name's instances for its memory, as a server
// ends the worker of a game over its budget: their players' sockets close
// with CodeOutOfMemory, and each instance is kept as an error for Overview
// (the playground shows it). hoster dev, which runs every game in its one
// process, calls it. It returns how many instances and players it ended.
func (rt *Runtime) EndOutOfMemory(domain, name string) (instances, players int) {
	g := rt.lookup(domain, name)
	if g == nil {
		return 0, 0
	}
	for _, in := range g.snapshot() {
		in.mu.Lock()
		stopping, seats := in.stopping, in.seats
		in.mu.Unlock()
		if stopping {
			continue
		}
		instances++
		players += seats
		g.keepError(HookError{Time: rt.now(), Instance: in.id, Hook: "memory", Error: "closed: " + ReasonOutOfMemory})
		in.stop(CodeOutOfMemory, ReasonOutOfMemory)
	}
	return instances, players
}
