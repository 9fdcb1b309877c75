package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/compact"
)

// A protocol is how a bot speaks to one kind of server: how it joins, what a
// move looks like, and which received frames are state updates.
type protocol interface {
	// join connects one player and returns its socket and what its
	// welcome said; resume is the token of an earlier welcome, "" for none.
	join(ctx context.Context, resume string) (ws *websocket.Conn, j joined, err error)
	move() (frameType int, data []byte)
	// isUpdate tells a state update (a hoster "update", a Colyseus
	// ROOM_STATE_PATCH) from every other frame.
	isUpdate(data []byte) bool
	// answer is what the bot must send back for a received frame, if
	// anything (Colyseus's join acknowledgement).
	answer(data []byte) []byte
	// effects follows a joined socket's frames for a timed bot
	// (latency.go).
	effects(j joined) (effects, error)
}

// joined is what a join's welcome said: the room (instance) the player
// landed in and, for hoster, the token that resumes its seat; and how long
// the WebSocket handshake took (from the dial to the upgrade's answer,
// before the welcome); its player's id (hoster's player, Colyseus's
// sessionId) and hoster's welcome as it came.
type joined struct {
	room, resume string
	handshake    time.Duration
	player       string
	welcome      []byte
}

// botStats is what the bots saw. Frames are counted only while measuring is
// set; bytes are as received on the wire: payload plus WebSocket frame
// header.
type botStats struct {
	measuring atomic.Bool
	connected atomic.Int64
	failed    atomic.Int64
	thrown    atomic.Int64 // connections the server ended while the run went on
	updates   atomic.Int64
	received  atomic.Int64
	gaps      atomic.Int64
	lateGaps  atomic.Int64
	silent    atomic.Int64 // bots that got no update at all while measuring

	// bySecond, when set, counts the updates of each second since t0
	// (Unix nanoseconds; set with measuring).
	t0       atomic.Int64
	bySecond []atomic.Int64

	mu        sync.Mutex
	rooms     map[string]int
	joins     []time.Duration // each bot's first join: from its dial to its welcome
	joinHS    []time.Duration // and its handshake: from its dial to the upgrade's answer
	latencies []time.Duration // the timed bots' moves while measuring (latency.go)
	lost      atomic.Int64    // timed moves whose effect did not come
}

// startMeasuring starts counting updates, bySecond's seconds from now.
func (st *botStats) startMeasuring() {
	st.t0.Store(time.Now().UnixNano())
	st.measuring.Store(true)
}

// botOptions make bots behave as the browser library does, and report.
type botOptions struct {
	// rejoin: after a close the bot did not ask for, join again as
	// pkg/gen/js/client.js does: not after 4000, 4001, 4002 or 1013; after
	// a jittered backoff (half to all of 500 ms doubling with each failed
	// attempt, at most 30 s; the count restarts at a welcome), with the
	// last welcome's resume token.
	rejoin bool
	// closed is told of each socket the server ended (code 1006 when
	// there was no close frame, or when the handshake failed), welcomed of
	// each welcome after the first, and how long its join took (from the
	// dial).
	closed   func(bot, code int, reason string)
	welcomed func(bot int, room string, took time.Duration)
	// timeEvery: one bot in timeEvery (0: none) times its moves instead of
	// sending one each move interval (latency.go).
	timeEvery int
}

// final are the close codes after which client.js does not come back.
var final = map[int]bool{4000: true, 4001: true, 4002: true, 1013: true}

// wireSize is a server-to-client frame's size on the wire: the payload and
// its unmasked frame header (RFC 6455 5.2).
func wireSize(payload int) int64 {
	switch {
	case payload < 126:
		return int64(payload) + 2
	case payload < 1<<16:
		return int64(payload) + 4
	default:
		return int64(payload) + 10
	}
}

// runBots connects n bots in waves of 50, as people join; each moves
// moveRate times a second and reads everything it is sent until ctx ends.
// It returns once every bot has joined or failed (or after a minute), with
// wait, which returns once every bot has stopped.
func runBots(ctx context.Context, p protocol, n, moveRate, sendRate int) (st *botStats, wait func()) {
	return runBotsWith(ctx, p, n, moveRate, sendRate, botOptions{}, nil)
}

// runBotsWith is runBots with options; with bySecond, st counts each
// second's updates in it.
func runBotsWith(ctx context.Context, p protocol, n, moveRate, sendRate int, o botOptions, bySecond []atomic.Int64) (st *botStats, wait func()) {
	st = &botStats{rooms: map[string]int{}, bySecond: bySecond}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.bot(ctx, p, i, moveRate, sendRate, o)
		}()
		if i%50 == 49 {
			time.Sleep(20 * time.Millisecond) // join in waves, as people do
		}
	}
	for deadline := time.Now().Add(60 * time.Second); st.connected.Load()+st.failed.Load() < int64(n) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	return st, wg.Wait
}

// bot is one player: it joins and plays until its socket ends, and with
// o.rejoin joins again as the browser library would.
func (st *botStats) bot(ctx context.Context, p protocol, i, moveRate, sendRate int, o botOptions) {
	var got int64 // updates while measuring
	defer func() {
		if got == 0 {
			st.silent.Add(1)
		}
	}()
	var resume string
	for attempt, first := 0, true; ; {
		start := time.Now()
		ws, j, err := p.join(ctx, resume)
		switch {
		case err != nil && first && !o.rejoin:
			st.failed.Add(1)
			log.Printf("bot %d: %v", i, err)
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if o.closed != nil {
				o.closed(i, websocket.CloseAbnormalClosure, err.Error())
			}
		default:
			took := time.Since(start)
			resume = j.resume
			st.mu.Lock()
			st.rooms[j.room]++
			if first {
				st.joins, st.joinHS = append(st.joins, took), append(st.joinHS, j.handshake)
			}
			st.mu.Unlock()
			if first {
				st.connected.Add(1)
			} else if o.welcomed != nil {
				o.welcomed(i, j.room, took)
			}
			first, attempt = false, 0
			var fx effects // a timed bot's
			if o.timeEvery > 0 && i%o.timeEvery == 0 {
				if fx, err = p.effects(j); err != nil {
					log.Printf("bot %d: %v", i, err)
				}
			}
			code, reason := st.play(ctx, p, ws, i, moveRate, sendRate, fx, &got)
			if ctx.Err() != nil || !o.rejoin || final[code] {
				return
			}
			if o.closed != nil {
				o.closed(i, code, reason)
			}
		}
		delay := min(30*time.Second, 500*time.Millisecond<<min(attempt, 10))
		attempt++
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay/2 + rand.N(delay/2)):
		}
	}
}

// closeAtEnd closes ws as the run ends (ctx), unless it ended before.
func closeAtEnd(ctx context.Context, ws *websocket.Conn, wmu *sync.Mutex, ended <-chan struct{}) {
	select {
	case <-ended:
		return
	case <-ctx.Done():
	}
	wmu.Lock()
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	wmu.Unlock()
	ws.SetReadDeadline(time.Now().Add(2 * time.Second))
}

// play moves and reads on one joined socket until it ends; it returns the
// close code the server gave (1006 when none) and its reason. With fx, the
// bot times its moves (latency.go).
func (st *botStats) play(ctx context.Context, p protocol, ws *websocket.Conn, i, moveRate, sendRate int, fx effects, got *int64) (int, string) {
	defer ws.Close()
	sendEvery := time.Second / time.Duration(sendRate)
	moveEvery := time.Second / time.Duration(moveRate)
	var wmu sync.Mutex // the mover and the answers share the socket
	write := func(ft int, b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return ws.WriteMessage(ft, b)
	}
	ended := make(chan struct{})
	defer close(ended)
	go closeAtEnd(ctx, ws, &wmu, ended)
	seen := make(chan time.Time, 1) // a timed bot's reads of its own player's changes
	timed := fx != nil
	if timed {
		ft, mv := p.move()
		go st.timedMoves(write, ft, mv, moveEvery, seen, ended)
	}
	if !timed {
		ft, mv := p.move()
		go moves(ctx, write, ft, mv, moveEvery, ended)
	}
	var last time.Time
	var buf bytes.Buffer // reused: a bot's garbage would be counted with the server's
	for {
		_, r, err := ws.NextReader()
		if err != nil {
			if ctx.Err() != nil {
				return 0, ""
			}
			st.thrown.Add(1)
			log.Printf("bot %d: the server ended the connection: %v", i, err)
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Text
			}
			return websocket.CloseAbnormalClosure, err.Error()
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			continue
		}
		data := buf.Bytes()
		if a := p.answer(data); a != nil {
			write(websocket.BinaryMessage, a)
		}
		if fx != nil {
			if mine, err := fx.mine(data); err != nil {
				log.Printf("bot %d: timing its moves: %v", i, err)
				fx = nil // its moves go on untimed: lost
			} else if mine {
				select {
				case seen <- time.Now():
				default:
				}
			}
		}
		if st.measuring.Load() && p.isUpdate(data) {
			*got++
			last = st.count(len(data), last, sendEvery)
		}
	}
}

// moves writes a bot's move every moveEvery until the bot ends.
func moves(ctx context.Context, write func(int, []byte) error, ft int, mv []byte, moveEvery time.Duration, ended <-chan struct{}) {
	t := time.NewTicker(moveEvery)
	defer t.Stop()
	for {
		select {
		case <-ended:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			if write(ft, mv) != nil {
				return
			}
		}
	}
}

// count takes an update of n bytes received now, the bot's previous one at
// last (zero: none), into the stats; it returns now.
func (st *botStats) count(n int, last time.Time, sendEvery time.Duration) time.Time {
	now := time.Now()
	st.updates.Add(1)
	st.received.Add(wireSize(n))
	if s := int(now.UnixNano()-st.t0.Load()) / int(time.Second); s >= 0 && s < len(st.bySecond) {
		st.bySecond[s].Add(1)
	}
	if !last.IsZero() {
		st.gaps.Add(1)
		if now.Sub(last) > sendEvery*3/2 {
			st.lateGaps.Add(1) // a send round this viewer missed
		}
	}
	return now
}

// hosterProtocol is the game socket of DESIGN.md: one socket, a welcome,
// then updates; JSON text frames, or with compact the updates in binary
// frames of the compact protocol (docs/protocol.md), counted, not decoded.
type hosterProtocol struct {
	url     string // ws://addr/load
	host    string
	compact bool
	query   string // more of the query, e.g. room=r1
}

var dialer = websocket.Dialer{HandshakeTimeout: 30 * time.Second}

func (h hosterProtocol) join(ctx context.Context, resume string) (*websocket.Conn, joined, error) {
	hdr := http.Header{"Host": {h.host}}
	if h.compact {
		hdr.Set("Sec-WebSocket-Protocol", compact.Protocol)
	}
	u := h.url + "?name=bot"
	if h.query != "" {
		u += "&" + h.query
	}
	if resume != "" {
		u += "&resume=" + url.QueryEscape(resume)
	}
	start := time.Now()
	ws, _, err := dialer.DialContext(ctx, u, hdr)
	if err != nil {
		return nil, joined{}, fmt.Errorf("dialing: %w", err)
	}
	handshake := time.Since(start)
	if h.compact && ws.Subprotocol() != compact.Protocol {
		ws.Close()
		return nil, joined{}, fmt.Errorf("dialing: the server did not take %s", compact.Protocol)
	}
	var welcome struct {
		T        string `json:"t"`
		Instance string `json:"instance"`
		Resume   string `json:"resume"`
		Player   string `json:"player"`
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, raw, err := ws.ReadMessage()
	if err == nil {
		err = json.Unmarshal(raw, &welcome)
	}
	if err != nil || welcome.T != "welcome" {
		ws.Close()
		return nil, joined{}, fmt.Errorf("reading the welcome: %v (%q)", err, welcome.T)
	}
	ws.SetReadDeadline(time.Time{})
	return ws, joined{room: welcome.Instance, resume: welcome.Resume, handshake: handshake, player: welcome.Player, welcome: raw}, nil
}

func (hosterProtocol) move() (int, []byte) {
	return websocket.TextMessage, []byte(`{"c":"move","a":{"dx":1,"dy":-1}}`)
}

func (hosterProtocol) isUpdate(data []byte) bool {
	return len(data) > 0 && data[0] == compact.Update || len(data) > 6 && data[6] == 'u' // {"t":"update"
}

func (hosterProtocol) answer([]byte) []byte { return nil }

// Colyseus's protocol (0.18): a seat is reserved over HTTP
// (POST /matchmake/joinOrCreate/<room>), then the room's socket is
// ws://addr/<processId>/<roomId>?sessionId=<id>. Frames are binary, their
// first byte the message code; the client acknowledges JOIN_ROOM with the
// one byte JOIN_ROOM, after which the full state and then patches come.
const (
	colyseusJoinRoom   = 10
	colyseusRoomData   = 13
	colyseusStatePatch = 15
	colyseusCodeMask   = 0x1f
)

type colyseusProtocol struct {
	addr string // 127.0.0.1:port
	room string
	http *http.Client
}

func (c colyseusProtocol) join(ctx context.Context, _ string) (*websocket.Conn, joined, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.addr+"/matchmake/joinOrCreate/"+c.room, strings.NewReader("{}"))
	if err != nil {
		return nil, joined{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, joined{}, fmt.Errorf("reserving a seat: %w", err)
	}
	defer resp.Body.Close()
	var seat struct {
		SessionID string `json:"sessionId"`
		RoomID    string `json:"roomId"`
		ProcessID string `json:"processId"`
		Error     string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&seat); err != nil || resp.StatusCode != http.StatusOK || seat.RoomID == "" {
		return nil, joined{}, fmt.Errorf("reserving a seat: %s %v %s", resp.Status, err, seat.Error)
	}
	ws, _, err := dialer.DialContext(ctx, "ws://"+c.addr+"/"+seat.ProcessID+"/"+seat.RoomID+"?sessionId="+seat.SessionID, nil)
	if err != nil {
		return nil, joined{}, fmt.Errorf("dialing the room: %w", err)
	}
	return ws, joined{room: seat.RoomID, player: seat.SessionID}, nil
}

// move is ROOM_DATA with the type "move" as a msgpack string and
// {dx: 1, dy: -1} as a msgpack map, as the SDK's room.send("move", …) sends.
func (colyseusProtocol) move() (int, []byte) {
	return websocket.BinaryMessage, []byte{colyseusRoomData, 0xa4, 'm', 'o', 'v', 'e',
		0x82, 0xa2, 'd', 'x', 0x01, 0xa2, 'd', 'y', 0xff}
}

func (colyseusProtocol) isUpdate(data []byte) bool {
	return len(data) > 0 && data[0]&colyseusCodeMask == colyseusStatePatch
}

func (colyseusProtocol) answer(data []byte) []byte {
	if len(data) > 0 && data[0]&colyseusCodeMask == colyseusJoinRoom {
		return []byte{colyseusJoinRoom}
	}
	return nil
}
