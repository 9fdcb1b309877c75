package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/compact"
)

// maxQueued is how many bytes may wait for a slow socket before it is cut.
const maxQueued = 1 << 20

// maxUpdatesInFlight is how many updates may wait for a socket that did
// not take them at once before its viewer skips send rounds (and later gets
// one merged delta). Two, not one: a socket whose writer goroutine is
// scheduled a round late on a busy machine should not make its viewer skip.
const maxUpdatesInFlight = 2

// pingEvery keeps idle connections alive; a peer silent for 3 pings is gone.
const pingEvery = 20 * time.Second

// seat is a player's place in an instance, kept for the game's resume grace
// after the connection is lost (no close frame) so the player can come back
// with its resume token.
type seat struct {
	token  string
	in     *Instance
	player string
	conn   *conn     // nil while disconnected
	grace  stopper   // running while disconnected
	joined time.Time // for the playtime of the session
	left   bool      // the player left or was kicked: the seat is over
}

// conn is one player's socket.
//
// Frames are written by whichever goroutine queued them, without blocking:
// the instance's after a send round (one write carrying the viewer's update
// and the messages that follow it), the reader's for an error frame or a
// pong, a timer's for a ping. What the socket does not take at once goes
// to a writer goroutine, started then and ended once the socket took it
// all, which waits for the socket up to the write deadline; it also closes
// the socket at its end. A socket that keeps up has no goroutine writing
// for it (a goroutine each was 8 KiB of stack for each player). Only one
// goroutine writes at a time (writing); one that finds another writing
// leaves its frames to it.
type conn struct {
	ws   *websocket.Conn
	sock *wire // nil for a TestGame's players: nothing is written
	rt   *Runtime
	seat *seat
	// compact: the client negotiated the compact encoding (its updates are
	// binary frames); lastTime is the time of its previous update, which
	// the next one's header counts from (only the instance goroutine
	// touches it).
	compact  bool
	lastTime int64
	// addr is the client's address as the per-address bounds count it
	// (addrKey); "" for a TestGame's players.
	addr string

	mu      sync.Mutex
	queue   []outFrame // not yet taken by a writer
	out     []byte     // frames taken, not yet all written; only the writer touches it
	queued  int        // bytes in queue and out
	updates int        // updates queued since the socket last took everything
	writing bool       // a goroutine is writing out
	writer  bool       // a writer goroutine runs (writeLoop)
	closed  bool       // takes no more frames: its close frame is queued, or the socket failed
	ended   bool       // the close frame is written or a write failed: the writer goroutine closes the socket
	wake    chan struct{}
	gone    chan struct{} // closed once the socket is closed
	pinger  *time.Timer   // sends the next ping
}

var upgrader = websocket.Upgrader{
	// 0: gorilla reads through the HTTP server's hijacked reader (4 KiB)
	// instead of a buffer of its own, when it reads at all (a frameReader
	// reads most sockets).
	ReadBufferSize: 0,
	// gorilla writes no message here (conn.writeOut frames them all): a pool
	// it never draws from spares each connection a write buffer.
	WriteBufferPool: &sync.Pool{},
	// The game's origins are checked before the upgrade, in serveSocket.
	CheckOrigin: func(*http.Request) bool { return true },
	// A client asking for none gets the JSON text frames of DESIGN.md.
	Subprotocols: []string{compact.Protocol},
}

// roomReason refuses a room's name.
const roomReason = "room must be letters and digits, up to 32"

// serveSocket checks the Origin, upgrades, and seats the player: on its
// resume token's seat when valid, else in an instance with room. A socket
// past its address's bound is turned away after the upgrade, with 1013 and
// a reason the page can show. With a HandOff, a socket that passes the
// checks and its address's bound is upgraded and goes to the game's worker
// instead, and counts for its address until the worker is done with it.
func (rt *Runtime) serveSocket(w http.ResponseWriter, r *http.Request, g *Game) {
	if origin := r.Header.Get("Origin"); origin != "" && !g.current().cfg.AllowsOrigin(origin) {
		rt.refusedOrigin(g, origin)
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.NotFound(w, r)
		return
	}
	room := r.URL.Query().Get("room")
	if !validRoom(room) {
		http.Error(w, roomReason, http.StatusBadRequest)
		return
	}
	addr := AddrKey(r)
	held := rt.takeSocket(addr)
	end := func() {}
	handed := false // to readLoop, which runs end once the socket is done with
	defer func() {
		if !handed {
			end()
		}
	}()
	if held {
		end = func() { rt.dropSocket(addr) }
		if room != "" && rt.o.Rooms != nil {
			leave, served := rt.o.Rooms.Enter(w, r, g.Key()+"/"+room, rt.roomLinger(g))
			if served {
				return // the deferred end drops the socket's count
			}
			end = func() { leave(); rt.dropSocket(addr) }
		}
		if rt.o.HandOff != nil {
			handed = true // handOff runs end, or its taker does
			rt.handOff(w, r, g, addr, end)
			return
		}
	}
	var sock *wire
	ws, err := upgrader.Upgrade(hijackInto{w, &sock}, r, nil)
	if err != nil {
		return
	}
	sock.markUpgraded()
	c := rt.newConn(ws, sock, addr, ws.Subprotocol() == compact.Protocol)
	if !held {
		rt.refuseBound(c, g, boundSockets, socketsReason)
		return
	}
	handed = true
	rt.play(c, g, r.URL.Query(), nil, end)
}

// handOff upgrades r's socket here and gives it to Options.HandOff's
// taker, with what its player's join needs. A game whose taker cannot be
// had (its worker held stopped) is answered 503 before the upgrade.
func (rt *Runtime) handOff(w http.ResponseWriter, r *http.Request, g *Game, addr string, end func()) {
	give, err := rt.o.HandOff(g.Domain, g.Name)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		end()
		return
	}
	var sock *wire
	ws, err := upgrader.Upgrade(hijackInto{w, &sock}, r, nil)
	if err != nil { // gorilla answered it
		end()
		return
	}
	give(Handed{Conn: sock.Conn, Request: r, Adopted: Adopted{Domain: g.Domain, Game: g.Name,
		Query: r.URL.RawQuery, Addr: addr, Compact: ws.Subprotocol() == compact.Protocol}}, end)
}

// newConn is a player's socket, upgraded, with its pings started.
func (rt *Runtime) newConn(ws *websocket.Conn, sock *wire, addr string, compact bool) *conn {
	c := &conn{ws: ws, sock: sock, rt: rt, addr: addr, wake: make(chan struct{}, 1), gone: make(chan struct{}), compact: compact}
	c.mu.Lock()
	c.pinger = time.AfterFunc(pingEvery, c.ping)
	c.mu.Unlock()
	return c
}

// play seats c's player (on its resume token's seat when valid, else in
// an instance with room, q's room and params) and reads its commands until
// the socket ends (readLoop); end runs once the socket is done with.
func (rt *Runtime) play(c *conn, g *Game, q url.Values, grant *roomGrant, end func()) {
	params := map[string]string{}
	for k, v := range q {
		if k != "resume" && len(v) > 0 {
			params[k] = v[0]
		}
	}
	if s := rt.resume(q.Get("resume"), g, c); s != nil {
		c.seat = s
	} else if rt.seatNew(g, q.Get("room"), params, c, grant) == nil {
		end()
		return
	}
	grant.done() // its place is known: the room goes back unless spent
	c.readLoop(end)
}

// roomLinger is how long a fleet keeps a private room of g claimed after
// its last socket ended: its seats' resume grace and its empty instance's
// grace.
func (rt *Runtime) roomLinger(g *Game) time.Duration {
	cfg := g.current().cfg
	resume, empty := rt.o.ResumeGrace, rt.o.EmptyGrace
	if resume <= 0 {
		resume = time.Duration(cfg.ResumeGrace * float64(time.Second))
	}
	if empty <= 0 {
		empty = time.Duration(cfg.EmptyGrace * float64(time.Second))
	}
	return resume + empty
}

// seatNew places a new player on c (room and params from its socket's
// query) and queues its join for the instance's next tick. A player with
// no place (a full or locked room, a bound reached) gets an error frame
// and a close saying why, and nil is returned. grant is the room the
// parent took for c's socket, nil for none.
func (rt *Runtime) seatNew(g *Game, room string, params map[string]string, c *conn, grant *roomGrant) *seat {
	in, err := rt.place(g, room, params, c.addr, grant)
	if err != nil {
		np := err.(*errNoPlace)
		if np.bound != "" {
			rt.refuseBound(c, g, np.bound, np.reason)
			return nil
		}
		c.sendError(np.reason, "")
		c.closeWith(np.code, np.reason)
		return nil
	}
	in.mu.Lock()
	in.nextID++
	player := fmt.Sprintf("p%d", in.nextID)
	in.mu.Unlock()
	s := &seat{token: newID() + newID(), in: in, player: player, conn: c, joined: rt.now()}
	rt.mu.Lock()
	rt.seats[s.token] = s
	in.mu.Lock()
	in.byPlayer[player] = s
	in.mu.Unlock()
	rt.mu.Unlock()
	c.seat = s
	if !in.enqueue(event{kind: "join", player: player, params: params, conn: c, seat: s}) {
		c.closeWith(1011, "the game instance is closing")
		return nil
	}
	return s
}

// validRoom reports whether code is a valid ?room= code: letters and
// digits (ASCII), up to 32; "" is no room.
func validRoom(code string) bool {
	if len(code) > 32 {
		return false
	}
	for _, r := range code {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// resume reattaches c to the seat of token, if it is valid for this game.
func (rt *Runtime) resume(token string, g *Game, c *conn) *seat {
	if token == "" {
		return nil
	}
	rt.mu.Lock()
	s := rt.seats[token]
	if s == nil || s.in.g != g || s.left {
		rt.mu.Unlock()
		return nil
	}
	// While disconnected, the grace must still be running; a player whose
	// old socket has not been noticed dropping yet (common when a phone
	// changes networks) takes the seat over, and the old socket is closed
	// when the new one is welcomed.
	if s.conn == nil && (s.grace == nil || !s.grace.Stop()) {
		rt.mu.Unlock()
		return nil
	}
	s.grace, s.conn = nil, c
	rt.mu.Unlock()
	if !s.in.enqueue(event{kind: "resume", player: s.player, conn: c, seat: s}) {
		return nil
	}
	return s
}

// disconnected ends c's part in its seat. A clean close (the player sent
// 1000 or 1001), or a game whose resume grace is 0, is a leave at once;
// otherwise the seat is held for the grace, the player marked disconnected,
// and when the grace runs out the player leaves.
func (rt *Runtime) disconnected(c *conn, clean bool) {
	s := c.seat
	if s == nil {
		return
	}
	grace := rt.o.ResumeGrace
	if grace <= 0 {
		grace = time.Duration(s.in.version().cfg.ResumeGrace * float64(time.Second))
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	s.in.mu.Lock()
	if s.in.conns[s.player] == c {
		delete(s.in.conns, s.player)
	}
	stopping := s.in.stopping
	s.in.mu.Unlock()
	if s.conn != c || s.left {
		return
	}
	s.conn = nil
	if stopping {
		return
	}
	if clean || grace <= 0 {
		rt.leaveLocked(s)
		return
	}
	s.in.enqueue(event{kind: "drop", player: s.player})
	s.grace = rt.o.clock.AfterFunc(grace, func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if s.conn != nil || rt.seats[s.token] != s || s.left {
			return
		}
		rt.leaveLocked(s)
	})
}

// leaveLocked ends a seat: the player leaves its instance at the next tick
// and cannot resume. rt.mu is held.
func (rt *Runtime) leaveLocked(s *seat) {
	if s.left {
		return
	}
	s.left = true
	s.in.mu.Lock()
	if s.in.byPlayer[s.player] == s {
		delete(s.in.byPlayer, s.player)
	}
	s.in.mu.Unlock()
	if s.grace != nil {
		s.grace.Stop()
	}
	delete(rt.seats, s.token)
	s.in.enqueue(event{kind: "leave", player: s.player, seat: s})
	s.in.release()
}

// dropSeats forgets the seats of a stopped instance.
func (rt *Runtime) dropSeats(in *Instance) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for tok, s := range rt.seats {
		if s.in == in {
			if s.grace != nil {
				s.grace.Stop()
			}
			delete(rt.seats, tok)
		}
	}
}

// readLoop reads commands until the socket ends: a malformed frame or a bad
// command gets an error frame and the socket stays open; too large a frame or
// too many commands closes it (1008). A socket that gives its descriptor is
// read by a frameReader: in the process's read set, where readLoop returns
// at once and the socket is read with the others, else from this
// goroutine; another (TLS, a test's pipe) by gorilla's reader. end runs
// once the socket is done with, after the player's disconnection.
func (c *conn) readLoop(end func()) {
	finish := func(err error) {
		c.closeWith(1000, "")
		// The player closed with 1000 or 1001: a leave.
		c.rt.disconnected(c, websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway))
		end()
	}
	// Pings are answered in order with the runtime's frames, not by a write
	// of the reader's own.
	ping := func(data []byte) {
		if c.add(outFrame{opPong, bytes.Clone(data)}, false) {
			c.flush()
		}
	}
	rc := c.sock.reader()
	if r := c.sock.inSet(c.rt.o.MaxFrame); r != nil {
		deadline := r.moveDeadline
		in := r.start(c.commands(deadline), ping, func([]byte) { deadline() }, c.closeWith, finish)
		c.sock.joined(r, in)
		if in {
			return
		}
	}
	deadline := func() { c.sock.SetReadDeadline(time.Now().Add(3 * pingEvery)) }
	deadline()
	var err error
	if rc != nil {
		f := &frameReader{limit: c.rt.o.MaxFrame}
		err = f.run(rc, c.commands(deadline), ping, func([]byte) { deadline() }, c.closeWith)
	} else {
		err = c.readGorilla(deadline, ping)
	}
	finish(err)
}

// readGorilla reads the socket's messages with gorilla's reader until it
// ends, and returns why.
func (c *conn) readGorilla(deadline func(), ping func([]byte)) error {
	ws := c.ws
	ws.SetReadLimit(c.rt.o.MaxFrame)
	ws.SetPongHandler(func(string) error { deadline(); return nil })
	ws.SetPingHandler(func(data string) error { ping([]byte(data)); return nil })
	ws.SetCloseHandler(func(code int, _ string) error {
		c.closeWith(code, "")
		return nil
	})
	message := c.commands(deadline)
	var buf bytes.Buffer // each frame read into it: handle keeps nothing of it
	for {
		// gorilla answers a frame over the read limit with 1009 itself.
		kind, data, err := readInto(ws, &buf)
		if err != nil {
			return err
		}
		if !message(kind, data) {
			return nil
		}
	}
}

// commands is what takes the socket's messages (false: the socket is to
// end): each one moves the read deadline on (at most once a second: each
// move costs a timer's work) and counts for the commands per second.
func (c *conn) commands(deadline func()) func(kind int, data []byte) bool {
	window, count := time.Now(), 0
	refreshed := window
	return func(kind int, data []byte) bool {
		now := time.Now()
		if now.Sub(refreshed) >= time.Second {
			refreshed = now
			deadline()
		}
		if now.Sub(window) >= time.Second {
			window, count = now, 0
		}
		if count++; count > c.rt.o.MaxCommandsPerSecond {
			c.closeWith(websocket.ClosePolicyViolation, "too many commands")
			return false
		}
		if kind != websocket.TextMessage {
			c.sendError("frames must be text: JSON {\"c\": command, \"a\": {arguments}}", "")
			return true
		}
		if !utf8.Valid(data) {
			// RFC 6455 8.1: a text frame that is not UTF-8 fails the connection.
			c.closeWith(websocket.CloseInvalidFramePayloadData, "text frames must be valid UTF-8")
			return false
		}
		c.handle(data)
		return true
	}
}

// readInto reads the next data frame's message into buf (emptied first)
// and returns its bytes, good until the next read; a large frame's buffer
// is not kept.
func readInto(ws *websocket.Conn, buf *bytes.Buffer) (int, []byte, error) {
	if buf.Cap() > 64<<10 {
		*buf = bytes.Buffer{}
	}
	buf.Reset()
	kind, r, err := ws.NextReader()
	if err != nil {
		return 0, nil, err
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return 0, nil, err
	}
	return kind, buf.Bytes(), nil
}

// handle takes one command frame: a malformed one, an unknown command or
// bad arguments are answered with an error frame at once; a valid command is
// queued for the next tick.
func (c *conn) handle(data []byte) {
	m, err := parseCommand(data)
	if err != nil {
		c.sendError(err.Error(), "")
		return
	}
	in := c.seat.in
	in.mu.Lock()
	schema, ok := in.ver.commands[m.C]
	in.mu.Unlock()
	if !ok {
		c.sendError(fmt.Sprintf("unknown command %q", m.C), m.C)
		return
	}
	if err := schema.Validate(m.A); err != nil {
		c.sendError(err.Error(), m.C)
		return
	}
	args, _ := m.A.(map[string]any) // nil when there were none: an empty object
	in.mu.Lock()
	in.tel.commands[m.C]++
	in.tel.cmdBytes.Sum += float64(len(data))
	in.tel.cmdBytes.Count++
	in.mu.Unlock()
	in.enqueue(event{kind: "cmd", player: c.seat.player, name: m.C, args: args})
}

// command is a player's frame: {"c": name, "a": {arguments}}, decoded
// once, arguments included.
type command struct {
	C string `json:"c"`
	A any    `json:"a"`
}

var errMalformed = errors.New("malformed message: want JSON {\"c\": command, \"a\": {arguments}}")

// parseCommand reads one command frame: exactly one JSON object with a
// non-empty command name, nothing after it.
func parseCommand(data []byte) (command, error) {
	if m, ok := quickCommand(data); ok {
		return m, nil
	}
	var m command
	if err := json.Unmarshal(data, &m); err != nil || m.C == "" {
		return command{}, errMalformed
	}
	return m, nil
}

// A connection's state at a send round.
const (
	connReady  = iota // takes an update
	connBusy          // maxUpdatesInFlight updates still queued or being written: skip
	connClosed        // gone or going
)

func (c *conn) state() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return connClosed
	case c.updates >= maxUpdatesInFlight:
		return connBusy
	}
	return connReady
}

// enqueue queues a text message and writes it if the socket takes it at
// once (else the writer goroutine will), never blocking the caller; it
// reports whether the message was taken (not on a closed or cut connection).
func (c *conn) enqueue(msg []byte, update bool) bool {
	if !c.add(outFrame{opText, msg}, update) {
		return false
	}
	c.flush()
	return true
}

// add queues f without writing it: the caller flushes when it has queued
// everything due. A connection that would queue more than maxQueued bytes
// is closed with 1008.
func (c *conn) add(f outFrame, update bool) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if c.queued+len(f.data) > maxQueued {
		c.mu.Unlock()
		c.closeWith(websocket.ClosePolicyViolation, "too slow a reader")
		return false
	}
	c.queue = append(c.queue, f)
	c.queued += len(f.data)
	if update {
		c.updates++
	}
	c.mu.Unlock()
	return true
}

// closeWith queues a close frame after what is queued; the socket ends once
// it is written.
func (c *conn) closeWith(code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.queue = append(c.queue, outFrame{opClose, websocket.FormatCloseMessage(code, reason)})
	c.mu.Unlock()
	c.flush()
}

// flush writes what is queued from the calling goroutine, as far as the
// socket takes it without blocking.
func (c *conn) flush() {
	if c.sock != nil {
		c.writeOut(false)
	}
}

// signal wakes the writer goroutine, started if none runs (a socket of a
// TestGame's player has none: nothing is written).
func (c *conn) signal() {
	c.mu.Lock()
	start := !c.writer && c.sock != nil
	c.writer = c.writer || start
	c.mu.Unlock()
	if start {
		go c.writeLoop()
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// ping queues a ping and writes it, and sets the next, until the socket
// ends.
func (c *conn) ping() {
	if c.add(outFrame{opPing, nil}, false) {
		c.flush()
		c.mu.Lock()
		c.pinger.Reset(pingEvery)
		c.mu.Unlock()
	}
}

// writeOut writes the queued frames, all that are due in one write. With
// wait false (any goroutine) it never blocks: what the socket does not take
// at once, or a socket ended, is left to the writer goroutine, signalled.
// With wait true (the writer goroutine) each write waits up to
// WriteTimeout; a write that fails or times out ends the socket without a
// close frame.
func (c *conn) writeOut(wait bool) {
	for {
		c.mu.Lock()
		if c.writing || c.ended {
			c.mu.Unlock()
			return
		}
		before := len(c.out)
		for i, f := range c.queue {
			c.out = appendFrame(c.out, f)
			c.queued -= len(f.data)
			c.queue[i] = outFrame{}
		}
		c.queue = c.queue[:0]
		c.queued += len(c.out) - before
		if len(c.out) == 0 {
			c.updates = 0
			c.ended = c.closed // its close frame was the last thing written
			ended := c.ended
			c.mu.Unlock()
			if ended && !wait {
				c.signal()
			}
			return
		}
		buf := c.out
		c.writing = true
		c.mu.Unlock()

		n, err := c.sock.write(buf, wait, c.rt.o.WriteTimeout)

		c.mu.Lock()
		c.writing = false
		c.queued -= n
		c.out = c.out[:copy(c.out, c.out[n:])]
		if cap(c.out) > 64<<10 && len(c.out) == 0 {
			c.out = nil // a burst's buffer is not kept for good
		}
		if err != nil {
			if err != errWouldBlock || wait {
				// Stuck past the write deadline, or gone.
				c.closed, c.ended = true, true
				c.queue, c.out, c.queued = nil, nil, 0
			}
			c.mu.Unlock()
			if !wait {
				c.signal()
			}
			return
		}
		c.mu.Unlock()
	}
}

// writeLoop writes what the socket did not take at once, waiting for it,
// and returns once it took everything; it closes the socket when it has
// ended.
func (c *conn) writeLoop() {
	for {
		<-c.wake
		c.writeOut(true)
		c.mu.Lock()
		switch {
		case c.ended:
			if c.pinger != nil {
				c.pinger.Stop()
			}
			c.mu.Unlock()
			c.sock.Close()
			close(c.gone)
			return
		case len(c.queue) == 0 && len(c.out) == 0 && !c.writing:
			c.writer = false // the next signal starts another
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// frameOp is the WebSocket frame an update goes in: binary for a compact
// update (its first byte is compact.Update), text for JSON.
func frameOp(msg []byte) byte {
	if len(msg) > 0 && msg[0] == compact.Update {
		return opBinary
	}
	return opText
}
