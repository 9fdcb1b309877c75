package runtime

import (
	"net"
	"net/http"
	"net/url"
)

// A parent process upgrades each game socket itself and hands the
// WebSocket to the game's worker (Options.HandOff), which serves it with
// Adopt: the worker reads no HTTP, and the parent knows every socket it
// handed speaks WebSocket (a worker's end closes them all with a code).

// Adopted is what a runtime needs to serve a socket upgraded elsewhere.
type Adopted struct {
	Domain string `json:"domain"`
	Game   string `json:"game"`
	// Query is the upgrade request's raw query: the room, the resume token
	// and the join's params.
	Query string `json:"query,omitempty"`
	// Addr is the client's address as the per-address bounds count it
	// (AddrKey).
	Addr string `json:"addr,omitempty"`
	// Compact: the socket speaks the compact protocol.
	Compact bool `json:"compact,omitempty"`
}

// Handed is a game socket this runtime upgraded for Options.HandOff's
// taker.
type Handed struct {
	Conn    net.Conn      // the socket: nothing was read past its handshake
	Request *http.Request // its upgrade request
	Adopted
}

// Adopt serves a game socket upgraded elsewhere and handed here (a
// worker's, by its parent, which counts it for its address) until its
// reading ends, as a socket this runtime upgraded: its player joins on its
// resume token's seat, else in an instance with room. settle, if not nil,
// says that a room was taken for the socket (the parent's count of new
// rooms per address): a join of it that starts an instance spends that
// room instead of asking Options.TakeRoom, and settle is called once, with
// whether it did, as soon as the socket's place is known. The socket must
// give its descriptor (a TCP or Unix socket): its frames are read off it.
func (rt *Runtime) Adopt(nc net.Conn, a Adopted, settle RoomSettle) {
	var grant *roomGrant
	if settle != nil {
		grant = &roomGrant{settle: settle}
	}
	defer grant.done()
	sock := newWire(nc)
	sock.markUpgraded()
	c := rt.newConn(nil, sock, a.Addr, a.Compact)
	g := rt.lookup(a.Domain, a.Game)
	switch {
	case sock.reader() == nil:
		rt.o.Logger.Warn("a handed socket without a descriptor", "game", a.Domain+"/"+a.Game)
		c.closeWith(1011, "the server cannot read this socket")
		return
	case g == nil:
		c.closeWith(1001, "the game is not running")
		return
	}
	q, _ := url.ParseQuery(a.Query) // what parses, as r.URL.Query()
	if !validRoom(q.Get("room")) {  // its parent checked it: a parent of another version
		c.closeWith(1008, roomReason)
		return
	}
	rt.play(c, g, q, grant, func() {}) // its parent counts it for its address
}
