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
