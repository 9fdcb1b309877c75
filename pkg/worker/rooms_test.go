package worker

import (
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/runtime"
)

// A room asked for while every room of the address is lent to a socket
// still being placed is not refused: it waits for one to come back, and is
// refused only once none is left out. A room spent stays spent.
func TestRoomAskedWhileLent(t *testing.T) {
	now := time.Unix(1e6, 0)
	rt, err := runtime.New(runtime.Options{RoomsPerMinute: 2, Now: func() time.Time { return now }, Game: "a.example/count"})
	if err != nil {
		t.Fatal(err)
	}
	rs := &rooms{o: &Options{TakeRoom: rt.TakeRoom, ReturnRoom: rt.ReturnRoom}}
	a, b := rs.grant("203.0.113.1"), rs.grant("203.0.113.1")
	if a == nil || b == nil || rs.grant("203.0.113.1") != nil {
		t.Fatal("want two rooms granted, the third refused")
	}
	answers := make(chan bool, 4)
	answer := func(ok bool) { answers <- ok }
	rs.ask("203.0.113.1", answer) // a socket without a grant needs a room
	select {
	case ok := <-answers:
		t.Fatalf("answered %v while both rooms were lent, want a wait", ok)
	default:
	}
	a(false) // joined a running instance: its room goes to the waiting one
	if ok := <-answers; !ok {
		t.Fatal("the room given back did not go to the one waiting")
	}
	rs.ask("203.0.113.1", answer)
	b(true) // spent: nothing comes back, nothing is left out
	if ok := <-answers; ok {
		t.Fatal("a room was granted past the bound")
	}
	rs.ask("203.0.113.1", answer)
	if ok := <-answers; ok {
		t.Fatal("a room was granted past the bound with none lent")
	}
}
