package runtime

// A game's worker asks its parent before it starts a new instance
// (Options.TakeRoom): the parent counts new rooms per address for the
// whole server. That round trip waits behind whatever both processes are
// busy with, and a public room's start holds every join of the game that
// needs it: in a burst of joins the round trips line up, one per room. So
// the parent takes the room for a socket as it hands the socket over, a
// grant, and the worker says at the socket's placement whether it was
// spent; one not spent goes back to its address (ReturnRoom).

// RoomSettle is told, once, whether a socket's granted room was spent.
type RoomSettle func(spent bool)

// roomGrant is a socket's granted room, nil for none. One goroutine, the
// socket's own, uses it.
type roomGrant struct {
	settle  RoomSettle
	spent   bool
	settled bool
}

// take spends the grant, if there is one still.
func (g *roomGrant) take() bool {
	if g == nil || g.spent || g.settled {
		return false
	}
	g.spent = true
	return true
}

// done settles the grant, once.
func (g *roomGrant) done() {
	if g == nil || g.settled {
		return
	}
	g.settled = true
	g.settle(g.spent)
}
