package fleet

import (
	"context"
	"testing"
	"time"
)

// openRooms opens the rooms of each node, with a claim's time to live of
// ttl, and closes them at the test's end.
func openRooms(t *testing.T, nodes []*Node, ttl time.Duration) []*Rooms {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rooms := make([]*Rooms, len(nodes))
	for i, n := range nodes {
		rs, err := n.Rooms(ctx, RoomsOptions{Listen: "127.0.0.1:0", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		rooms[i] = rs
	}
	return rooms
}

// claimUntilOwned asks rs for key until it holds it, and fails the test
// past a hang guard.
func claimUntilOwned(t *testing.T, rs *Rooms, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	for ctx.Err() == nil {
		if c, _, err := rs.claim(ctx, key); err == nil && c == nil {
			return
		}
	}
	t.Fatalf("node %s never got %s", rs.node.Name(), key)
}

// A room is the first claimer's: the others read its node and relay; once
// its sockets left for the linger, it is released and the next claimer
// gets it; a node that stops renewing (it died) loses it when the time to
// live ends.
func TestRoomClaimIsOneNodesUntilReleasedOrExpired(t *testing.T) {
	nodes := joinFleet(t, 3)
	rooms := openRooms(t, nodes, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const key = "a.example/arena/r1"
	if c, _, err := rooms[0].claim(ctx, key); err != nil || c != nil {
		t.Fatalf("the first claim: %+v, %v", c, err)
	}
	c, _, err := rooms[1].claim(ctx, key)
	if err != nil || c == nil || c.Node != "n0" || c.Relay != rooms[0].Addr().String() {
		t.Fatalf("another node read %+v, %v; want n0 at %s", c, err, rooms[0].Addr())
	}

	rooms[0].leave(key, 0)() // its one socket ended; no linger
	claimUntilOwned(t, rooms[1], key)
	if c, _, _ := rooms[2].claim(ctx, key); c == nil || c.Node != "n1" {
		t.Fatalf("after the release, node 2 read %+v; want n1", c)
	}

	// n1 stops renewing, as a dead node does (and releases nothing).
	rooms[1].once.Do(func() { close(rooms[1].stop); <-rooms[1].done; rooms[1].relay.Close() })
	claimUntilOwned(t, rooms[2], key)
}

// A room whose owner left the fleet (its node died: no presence, a relay
// that refuses) is succeeded by one live node, the same whichever node
// asks, at once, long before the dead claim's time to live ends; its
// claim then names the successor.
func TestDeadOwnerIsSucceededByOneNode(t *testing.T) {
	nodes := joinFleet(t, 3)
	rooms := openRooms(t, nodes, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
	defer cancel()
	const key = "a.example/arena/r2"
	claimUntilOwned(t, rooms[1], key)
	rooms[1].once.Do(func() { close(rooms[1].stop); <-rooms[1].done; rooms[1].relay.Close() })
	nodes[1].Close()

	var err error
	// The bucket may answer nothing for a moment (a read, too, while the
	// cluster notes the node's end): asked again.
	var c *claim
	var rev uint64
	for c == nil {
		if c, rev, err = rooms[0].claim(ctx, key); ctx.Err() != nil || (c != nil && c.Node != "n1") {
			t.Fatalf("the dead owner's claim reads %+v, %v", c, err)
		}
	}
	for rooms[0].present(ctx, "n1") || rooms[2].present(ctx, "n1") {
		if ctx.Err() != nil {
			t.Fatal("node n1 is still present after its node closed")
		}
	}
	next0, err0 := rooms[0].succeed(ctx, key, rev)
	next2, err2 := rooms[2].succeed(ctx, key, rev)
	if err0 != nil || err2 != nil || (next0 == nil) == (next2 == nil) {
		t.Fatalf("succeeding n1: node 0 got %+v %v, node 2 got %+v %v; want one to hold the room, the other to name it", next0, err0, next2, err2)
	}
	heir, other, next := rooms[0], rooms[2], next2
	if next0 != nil {
		heir, other, next = rooms[2], rooms[0], next0
	}
	if next.Node != heir.node.Name() || next.Relay != heir.Addr().String() {
		t.Fatalf("the other node names %+v, want %s at %s", next, heir.node.Name(), heir.Addr())
	}
	for {
		if c, _, err := other.claim(ctx, key); err == nil && c != nil && c.Node == heir.node.Name() {
			return // the claim was written in place of the dead one's
		}
		if ctx.Err() != nil {
			t.Fatal("the heir's claim never replaced the dead owner's")
		}
	}
}
