package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hoster-dev/hoster/pkg/compact"
)

// The command latency: a timed bot (one in botOptions.timeEvery) sends one
// move at a time and times it from its write to the read of the first
// update in which its own player changed, the next move only once that
// came (or after lostAfter), after a random wait under the move interval.
// Nothing else moves its player, so that update is the one the move's
// effect came in. Measured at the bot, it holds the loopback both ways,
// the server's wait for its tick and for its send round, and both servers
// are measured the same way.

// lostAfter is how long a timed move waits for its effect before it counts
// as lost and the bot moves again.
const lostAfter = 2 * time.Second

// An effects follows one joined socket's frames for its bot and tells
// whether a frame shows the bot's own player changed.
type effects interface {
	mine(frame []byte) (bool, error)
}

// timedMoves sends the timed bot's moves on write until ended, and times
// each against seen (the reads of updates in which its own player
// changed), recording them in st while it measures.
func (st *botStats) timedMoves(write func(int, []byte) error, ft int, mv []byte, every time.Duration, seen <-chan time.Time, ended <-chan struct{}) {
	for {
		select {
		case <-ended:
			return
		case <-time.After(rand.N(every)):
		}
		for len(seen) > 0 { // an effect that came after its move was counted lost
			<-seen
		}
		sent := time.Now()
		if write(ft, mv) != nil {
			return
		}
		measured := st.measuring.Load()
		select {
		case <-ended:
			return
		case at := <-seen:
			if measured && st.measuring.Load() {
				st.mu.Lock()
				st.latencies = append(st.latencies, at.Sub(sent))
				st.mu.Unlock()
			}
		case <-time.After(lostAfter):
			if measured {
				st.lost.Add(1)
			}
		}
	}
}

// hosterEffects reads a hoster socket's updates, compact or JSON.
type hosterEffects struct {
	dec *compact.Decoder // nil: JSON
	me  string
}

func (h hosterProtocol) effects(j joined) (effects, error) {
	e := &hosterEffects{me: j.player}
	if h.compact {
		e.dec = &compact.Decoder{}
		if err := e.dec.Text(j.welcome); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *hosterEffects) mine(frame []byte) (bool, error) {
	var m *compact.Message
	switch {
	case e.dec != nil && len(frame) > 0 && frame[0] == compact.Update:
		var err error
		if m, err = e.dec.Update(frame); err != nil {
			return false, err
		}
	case e.dec != nil:
		return false, e.dec.Text(frame)
	default:
		m = &compact.Message{}
		if err := json.Unmarshal(frame, m); err != nil {
			return false, fmt.Errorf("reading a frame: %w", err)
		}
	}
	for _, c := range m.Change {
		if c.ID == e.me {
			return true, nil
		}
	}
	return false, nil
}

// colyseusEffects reads a Colyseus socket's full state and patches
// (@colyseus/schema 5's encoding: a run of operations on the structure
// last switched to, 0xff and a refId switching) as far as the load game's
// state needs: a root {players, mobs} of two maps of {x, y}. It knows the
// refIds of the structures it was told of, and which is its own player's.
type colyseusEffects struct {
	session string
	kinds   map[uint64]int // refId: colyseusRoot, colyseusMap, colyseusThing
	players uint64         // the players map's refId
	me      uint64         // its own player's, 0 until known
	b       []byte
	pos     int
}

const (
	colyseusRoot = iota
	colyseusMap
	colyseusThing

	colyseusRoomState = 14
	colyseusSwitch    = 255
	colyseusTypeID    = 213
	colyseusAdd       = 128
	colyseusDelete    = 64
	colyseusClear     = 10
)

func (c colyseusProtocol) effects(j joined) (effects, error) {
	return &colyseusEffects{session: j.player, kinds: map[uint64]int{0: colyseusRoot}}, nil
}

var errColyseusShort = errors.New("reading a Colyseus state frame: it ends early")

func (e *colyseusEffects) mine(frame []byte) (bool, error) {
	if len(frame) == 0 || frame[0] != colyseusRoomState && frame[0] != colyseusStatePatch {
		return false, nil // other messages, and modifier bits the load room never sets
	}
	e.b, e.pos = frame, 1
	ref, touched := uint64(0), false
	for e.pos < len(e.b) {
		if e.b[e.pos] == colyseusSwitch {
			e.pos++
			id, err := e.number()
			if err != nil {
				return false, err
			}
			if _, ok := e.kinds[id]; !ok {
				return false, fmt.Errorf("reading a Colyseus state frame: refId %d unknown", id)
			}
			ref = id
			continue
		}
		var err error
		if e.kinds[ref] == colyseusMap {
			err = e.mapOp(ref)
		} else {
			touched = touched || ref == e.me && e.me != 0
			err = e.fieldOp(e.kinds[ref])
		}
		if err != nil {
			return false, err
		}
	}
	return touched, nil
}

// fieldOp reads one operation on the root (its fields are maps, as refIds)
// or on a thing (its fields are numbers).
func (e *colyseusEffects) fieldOp(kind int) error {
	first := e.b[e.pos]
	e.pos++
	op := first >> 6 << 6
	if op == colyseusDelete {
		return nil
	}
	v, err := e.number()
	if err != nil {
		return err
	}
	if kind == colyseusRoot {
		e.kinds[v] = colyseusMap
		if first&0x3f == 0 { // the field's index: 0 is players
			e.players = v
		}
	}
	return nil
}

// mapOp reads one operation on a map: its index, a key when it adds, and
// the thing's refId unless it deletes.
func (e *colyseusEffects) mapOp(ref uint64) error {
	op := e.b[e.pos]
	e.pos++
	if op == colyseusClear {
		return nil
	}
	if _, err := e.number(); err != nil {
		return err
	}
	var key string
	if op&colyseusAdd != 0 {
		var err error
		if key, err = e.string(); err != nil {
			return err
		}
	}
	if op == colyseusDelete {
		return nil
	}
	id, err := e.number()
	if err != nil {
		return err
	}
	if e.pos < len(e.b) && e.b[e.pos] == colyseusTypeID {
		e.pos++
		if _, err := e.number(); err != nil {
			return err
		}
	}
	if op&colyseusAdd != 0 {
		e.kinds[id] = colyseusThing
		if ref == e.players && key == e.session {
			e.me = id
		}
	}
	return nil
}

// number reads a msgpack-style number, returned as an unsigned integer
// (refIds and indexes are; the value of any other is not needed).
func (e *colyseusEffects) number() (uint64, error) {
	if e.pos >= len(e.b) {
		return 0, errColyseusShort
	}
	p := e.b[e.pos]
	e.pos++
	size := map[byte]int{0xca: 4, 0xcb: 8, 0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8}[p]
	if p < 0x80 || p > 0xdf {
		return uint64(p), nil
	}
	if size == 0 || e.pos+size > len(e.b) {
		return 0, errColyseusShort
	}
	raw := e.b[e.pos : e.pos+size]
	e.pos += size
	switch p {
	case 0xcc:
		return uint64(raw[0]), nil
	case 0xcd:
		return uint64(binary.LittleEndian.Uint16(raw)), nil
	case 0xce:
		return uint64(binary.LittleEndian.Uint32(raw)), nil
	}
	return 0, nil
}

// string reads a msgpack-style string.
func (e *colyseusEffects) string() (string, error) {
	if e.pos >= len(e.b) {
		return "", errColyseusShort
	}
	p := e.b[e.pos]
	e.pos++
	n := int(p & 0x1f)
	switch p {
	case 0xd9:
		if e.pos >= len(e.b) {
			return "", errColyseusShort
		}
		n = int(e.b[e.pos])
		e.pos++
	case 0xda, 0xdb:
		return "", errors.New("reading a Colyseus state frame: a key over 255 bytes")
	}
	if e.pos+n > len(e.b) {
		return "", errColyseusShort
	}
	s := string(e.b[e.pos : e.pos+n])
	e.pos += n
	return s, nil
}

// timedLine prints the command latency and returns it as RESULT fields.
func timedLine(st *botStats, every int) string {
	st.mu.Lock()
	l := st.latencies
	st.mu.Unlock()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if every > 0 {
		fmt.Printf("command        %d timed moves (one bot in %d sends one move at a time), from the bot's write of a move to its read of the first update its own player changed in (loopback both ways included): p50 %v, p99 %v, max %v; %d lost (no effect within %v)\n",
			len(l), every, pct(l, 50), pct(l, 99), pct(l, 100), st.lost.Load(), lostAfter)
	}
	return fmt.Sprintf("cmd_n=%d cmd_p50_ms=%.2f cmd_p99_ms=%.2f cmd_max_ms=%.2f cmd_lost=%d", len(l), ms(pct(l, 50)), ms(pct(l, 99)), ms(pct(l, 100)), st.lost.Load())
}
