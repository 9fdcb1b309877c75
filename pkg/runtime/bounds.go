package runtime

import (
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/clientip"
	"github.com/hoster-dev/hoster/pkg/game"
)

// The defaults of the bounds no game can lift (hoster-server serve's
// --max-instances, --instances, --rooms-per-minute and --sockets-per-address;
// docs/operators.md gives the reasons).
const (
	DefaultMaxInstances      = 500
	DefaultInstances         = 100
	DefaultRoomsPerMinute    = 30
	DefaultSocketsPerAddress = 64
)

// Which bound turned a player away, for its log line ("" for a room that
// is full or locked: the game's own rule, not logged).
const (
	boundInstances = "instances"
	boundRooms     = "rooms"
	boundSockets   = "sockets"
)

// addrBounds counts, per address, the game sockets open and the instances
// started lately.
type addrBounds struct {
	mu      sync.Mutex // a leaf: nothing else is locked while it is held
	sockets map[string]int
	rooms   map[string]*bucket
	swept   time.Time // when rooms last lost its idle buckets
}

// bucket is an address's allowance of new instances: RoomsPerMinute at
// most, refilled evenly over a minute.
type bucket struct {
	tokens float64
	last   time.Time
}

// addrKey is what the per-address bounds count by: an IPv4 address, or an
// IPv6 address's /64 (what one subscriber is usually given, so that the
// rest of it is not a fresh address each time); "" for none (a TestGame's
// players), which no per-address bound applies to.
func addrKey(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// AddrKey is the address r's socket counts for in the per-address bounds
// (addrKey of its client's address): what a worker's parent takes a room
// of, and what the worker asks for.
func AddrKey(r *http.Request) string { return addrKey(clientip.Of(r)) }

// maxInstances is how many instances of a game with cfg may run at once:
// its maxInstances, else Options.Instances, never above
// Options.MaxInstances.
func (rt *Runtime) maxInstances(cfg game.Config) int {
	n := cfg.MaxInstances
	if n <= 0 {
		n = rt.o.Instances
	}
	return min(n, rt.o.MaxInstances)
}

// takeSocket counts one more socket of addr, unless it holds
// SocketsPerAddress already; dropSocket gives a taken one back.
func (rt *Runtime) takeSocket(addr string) bool {
	if addr == "" || rt.o.SocketsPerAddress < 0 {
		return true
	}
	b := &rt.bounds
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sockets[addr] >= rt.o.SocketsPerAddress {
		return false
	}
	if b.sockets == nil {
		b.sockets = map[string]int{}
	}
	b.sockets[addr]++
	return true
}

func (rt *Runtime) dropSocket(addr string) {
	if addr == "" || rt.o.SocketsPerAddress < 0 {
		return
	}
	b := &rt.bounds
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sockets[addr]--; b.sockets[addr] <= 0 {
		delete(b.sockets, addr)
	}
}

// TakeRoom takes one of addr's (an address as the bounds count it: see
// Options.RoomsPerMinute) new instances, on the runtime's clock:
// RoomsPerMinute at once, then one more each 1/RoomsPerMinute of a minute.
// False when none is left. With Options.TakeRoom, that decides instead. A
// parent answers its workers with it: one count for every game.
func (rt *Runtime) TakeRoom(addr string) bool {
	per := float64(rt.o.RoomsPerMinute)
	if addr == "" || per < 0 {
		return true
	}
	if rt.o.TakeRoom != nil {
		return rt.o.TakeRoom(addr)
	}
	now := rt.now()
	b := &rt.bounds
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rooms == nil {
		b.rooms = map[string]*bucket{}
	}
	// A bucket idle for a minute is full again: it need not be kept.
	if now.Sub(b.swept) >= time.Minute {
		for k, bk := range b.rooms {
			if now.Sub(bk.last) >= time.Minute {
				delete(b.rooms, k)
			}
		}
		b.swept = now
	}
	bk := b.rooms[addr]
	if bk == nil {
		bk = &bucket{tokens: per, last: now}
		b.rooms[addr] = bk
	}
	if d := now.Sub(bk.last); d > 0 {
		bk.tokens = min(per, bk.tokens+d.Minutes()*per)
		bk.last = now
	}
	if bk.tokens < 1 {
		return false
	}
	bk.tokens--
	return true
}

// ReturnRoom gives addr back a room TakeRoom took and no instance spent
// (a room taken for a socket that joined a running instance), up to the
// bucket's RoomsPerMinute.
func (rt *Runtime) ReturnRoom(addr string) {
	per := float64(rt.o.RoomsPerMinute)
	if addr == "" || per < 0 || rt.o.TakeRoom != nil {
		return
	}
	b := &rt.bounds
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk := b.rooms[addr]; bk != nil {
		bk.tokens = min(per, bk.tokens+1)
	}
}

// refuseBound turns c's player away for a bound (one of the bound
// constants): an error frame and a close with 1013, both with reason, and
// a line in the log, at most one a minute for each game and bound, or each
// address and bound.
func (rt *Runtime) refuseBound(c *conn, g *Game, bound, reason string) {
	c.sendError(reason, "")
	c.closeWith(1013, reason)
	args := []any{"game", g.Key()}
	if c.addr != "" {
		args = append(args, "address", c.addr)
	}
	switch bound {
	case boundInstances:
		rt.refused(bound+" "+g.Key(), "socket refused: the game runs as many instances as it may",
			append(args, "limit", rt.maxInstances(g.current().cfg))...)
	case boundRooms:
		rt.refused(bound+" "+c.addr, "socket refused: too many new instances from one address in a minute",
			append(args, "limit", rt.o.RoomsPerMinute)...)
	case boundSockets:
		rt.refused(bound+" "+c.addr, "socket refused: too many sockets from one address",
			append(args, "limit", rt.o.SocketsPerAddress)...)
	}
}

// Reasons a player is given for a bound.
func instancesReason(limit int) string {
	return fmt.Sprintf("the game runs as many instances as it may (%d): try again later", limit)
}

const (
	roomsReason   = "too many new rooms from your address: try again in a minute"
	socketsReason = "too many connections from your address: try again later"
)
