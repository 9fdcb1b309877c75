package runtime

import (
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// failingFor is how long an instance may go on with a hook throwing in
// every tick before it is closed (1011): a game broken for good, not one
// bad moment.
const failingFor = 5 * time.Second

// maxPending is how many bytes of messages may wait for one player's next
// update before the player is cut as too slow a reader.
const maxPending = maxQueued

// apply carries out what the game's hooks asked for during a tick (the
// JSON list __tick returns, see prelude.js) and reports whether a tick,
// entity tick or timer threw.
func (in *Instance) apply(out string) (ticking bool) {
	if out == "" {
		return false
	}
	var ops [][]json.RawMessage
	if err := json.Unmarshal([]byte(out), &ops); err != nil {
		in.log.Error("reading what the hooks asked", "err", err)
		return false
	}
	str := func(op []json.RawMessage, i int) string {
		var s string
		if i < len(op) {
			json.Unmarshal(op[i], &s)
		}
		return s
	}
	for _, op := range ops {
		switch str(op, 0) {
		case "err":
			in.mu.Lock()
			c := in.conns[str(op, 1)]
			in.mu.Unlock()
			if c != nil {
				c.sendError(str(op, 3), str(op, 2))
			}
		case "herr":
			var t bool
			if len(op) > 3 {
				json.Unmarshal(op[3], &t)
			}
			ticking = ticking || t
			in.hookError(str(op, 1), str(op, 2))
		case "msg":
			id, msg := str(op, 1), []byte(str(op, 2))
			in.mu.Lock()
			if in.pending == nil {
				in.pending = map[string][][]byte{}
			}
			size := len(msg)
			for _, m := range in.pending[id] {
				size += len(m)
			}
			c := in.conns[id]
			if size <= maxPending {
				in.pending[id] = append(in.pending[id], msg)
			}
			in.mu.Unlock()
			if size > maxPending && c != nil {
				// Its socket has not taken an update for so long that the
				// messages would outgrow what it may queue.
				c.closeWith(websocket.ClosePolicyViolation, "too slow a reader")
			}
		case "kick":
			code := 4000
			if len(op) > 3 {
				json.Unmarshal(op[3], &code)
			}
			in.kick(str(op, 1), code, str(op, 2))
		case "close":
			in.mu.Lock()
			for id := range in.conns {
				in.flushLocked(id)
			}
			in.mu.Unlock()
			in.log.Info("instance closed by the game", "reason", str(op, 1))
			in.stop(4001, str(op, 1))
			return ticking
		case "lock", "unlock":
			in.mu.Lock()
			in.locked = str(op, 0) == "lock"
			in.mu.Unlock()
		}
	}
	return ticking
}

// flushLocked queues the messages waiting for player id on its socket,
// without writing them: the caller flushes or closes the socket after.
// in.mu is held.
func (in *Instance) flushLocked(id string) {
	msgs := in.pending[id]
	if len(msgs) == 0 {
		return
	}
	delete(in.pending, id)
	c := in.conns[id]
	if c == nil {
		return
	}
	for _, m := range msgs {
		c.add(outFrame{opText, m}, false)
	}
}

// kick ends a player's seat (a leave, no resume) and closes its socket with
// code and reason after what is already queued for it.
func (in *Instance) kick(player string, code int, reason string) {
	rt := in.rt
	rt.mu.Lock()
	in.mu.Lock()
	s := in.byPlayer[player]
	var c *conn
	if s != nil {
		c = s.conn
		if c == nil {
			c = in.conns[player]
		}
		in.flushLocked(player)
	}
	in.mu.Unlock()
	if s != nil {
		rt.leaveLocked(s)
	}
	rt.mu.Unlock()
	if c != nil {
		c.closeWith(code, reason)
	}
}

// hookError logs a hook's error, naming the game, the instance, the hook
// and the author's file:line, at most a few a second per game, and counts it.
func (in *Instance) hookError(where, text string) {
	in.mu.Lock()
	in.tel.errors++
	in.mu.Unlock()
	msg, at := splitStack(text)
	in.g.keepError(HookError{Time: in.rt.now(), Instance: in.id, Hook: where, Error: msg, At: at})
	if ok, held := in.g.logAllowed(in.rt.now()); ok {
		in.log.Error("hook error", "hook", where, "err", msg, "at", at, "heldBack", held)
	}
}

// frame matches one line of a goja stack: "at name (file:line:col(pc))" or
// "at file:line:col(pc)".
var frame = regexp.MustCompile(`at (?:.*? \()?([^()\s]+:\d+):\d+`)

// splitStack splits a JavaScript error's stack into its message and the
// first position in the game's own code (file:line), "" when none.
func splitStack(text string) (msg, at string) {
	msg, rest, _ := strings.Cut(text, "\n")
	for _, line := range strings.Split(rest, "\n") {
		m := frame.FindStringSubmatch(line)
		if m == nil || runtimeFile(m[1][:strings.LastIndex(m[1], ":")]) {
			continue
		}
		return msg, m[1]
	}
	return msg, ""
}

// Logging of hook errors and instance.log lines is limited per game to
// logBurst lines, refilled at logRate a second; what is held back is
// counted and said once logging resumes.
const (
	logRate  = 5
	logBurst = 20
)

// logAllowed takes one line from the game's log allowance; held is how
// many lines were held back since the last one allowed.
func (g *Game) logAllowed(now time.Time) (ok bool, held int) {
	if g == nil {
		return true, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.logLast.IsZero() {
		g.logTokens, g.logLast = logBurst, now
	}
	if d := now.Sub(g.logLast); d > 0 {
		g.logTokens = min(logBurst, g.logTokens+d.Seconds()*logRate)
		g.logLast = now
	}
	if g.logTokens < 1 {
		g.logDropped++
		return false, 0
	}
	g.logTokens--
	held, g.logDropped = g.logDropped, 0
	return true, held
}

// reportHeldBack logs the game's log lines held back and not yet reported,
// as an instance of it ends: a game that fell silent still says what it lost.
func (g *Game) reportHeldBack(log *slog.Logger) {
	g.mu.Lock()
	held := g.logDropped
	g.logDropped = 0
	g.mu.Unlock()
	if held > 0 {
		log.Warn("game log lines held back: more than the game's allowance", "heldBack", held)
	}
}

// sendError sends an error frame; command names the command it answers,
// when there is one.
func (c *conn) sendError(msg string, command string) {
	m := map[string]string{"t": "error", "error": msg}
	if command != "" {
		m["c"] = command
	}
	b, _ := json.Marshal(m)
	c.enqueue(b, false)
}
