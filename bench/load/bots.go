package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
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
	// join connects one player and returns its socket, the frame type of its
	// moves and the id of the room (instance) it landed in.
	join(ctx context.Context) (ws *websocket.Conn, room string, err error)
	move() (frameType int, data []byte)
	// isUpdate tells a state update (a hoster "update", a Colyseus
	// ROOM_STATE_PATCH) from every other frame.
	isUpdate(data []byte) bool
	// answer is what the bot must send back for a received frame, if
	// anything (Colyseus's join acknowledgement).
	answer(data []byte) []byte
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

	mu    sync.Mutex
	rooms map[string]int
}

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
	st = &botStats{rooms: map[string]int{}}
	var wg sync.WaitGroup
	sendEvery := time.Second / time.Duration(sendRate)
	moveEvery := time.Second / time.Duration(moveRate)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, room, err := p.join(ctx)
			if err != nil {
				st.failed.Add(1)
				log.Printf("bot %d: %v", i, err)
				return
			}
			defer ws.Close()
			st.mu.Lock()
			st.rooms[room]++
			st.mu.Unlock()
			st.connected.Add(1)
			var wmu sync.Mutex // the mover and the answers share the socket
			write := func(ft int, b []byte) error {
				wmu.Lock()
				defer wmu.Unlock()
				return ws.WriteMessage(ft, b)
			}
			go func() {
				<-ctx.Done()
				wmu.Lock()
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
				wmu.Unlock()
				ws.SetReadDeadline(time.Now().Add(2 * time.Second))
			}()
			go func() {
				t := time.NewTicker(moveEvery)
				defer t.Stop()
				ft, mv := p.move()
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
						if write(ft, mv) != nil {
							return
						}
					}
				}
			}()
			var last time.Time
			var got int64 // updates while measuring
			defer func() {
				if got == 0 {
					st.silent.Add(1)
				}
			}()
			var buf bytes.Buffer // reused: a bot's garbage would be counted with the server's
			for {
				_, r, err := ws.NextReader()
				if err != nil {
					if ctx.Err() == nil {
						st.thrown.Add(1)
						log.Printf("bot %d: the server ended the connection: %v", i, err)
					}
					return
				}
				buf.Reset()
				if _, err := buf.ReadFrom(r); err != nil {
					continue
				}
				data := buf.Bytes()
				if a := p.answer(data); a != nil {
					write(websocket.BinaryMessage, a)
				}
				if !st.measuring.Load() || !p.isUpdate(data) {
					continue
				}
				now := time.Now()
				got++
				st.updates.Add(1)
				st.received.Add(wireSize(len(data)))
				if !last.IsZero() {
					st.gaps.Add(1)
					if now.Sub(last) > sendEvery*3/2 {
						st.lateGaps.Add(1) // a send round this viewer missed
					}
				}
				last = now
			}
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

// hosterProtocol is the game socket of DESIGN.md: one socket, a welcome,
// then updates; JSON text frames, or with compact the updates in binary
// frames of the compact protocol (docs/protocol.md), counted, not decoded.
type hosterProtocol struct {
	url     string // ws://addr/load
	host    string
	compact bool
}

var dialer = websocket.Dialer{HandshakeTimeout: 30 * time.Second}

func (h hosterProtocol) join(ctx context.Context) (*websocket.Conn, string, error) {
	hdr := http.Header{"Host": {h.host}}
	if h.compact {
		hdr.Set("Sec-WebSocket-Protocol", compact.Protocol)
	}
	ws, _, err := dialer.DialContext(ctx, h.url+"?name=bot", hdr)
	if err != nil {
		return nil, "", fmt.Errorf("dialing: %w", err)
	}
	if h.compact && ws.Subprotocol() != compact.Protocol {
		ws.Close()
		return nil, "", fmt.Errorf("dialing: the server did not take %s", compact.Protocol)
	}
	var welcome struct {
		T        string `json:"t"`
		Instance string `json:"instance"`
	}
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := ws.ReadJSON(&welcome); err != nil || welcome.T != "welcome" {
		ws.Close()
		return nil, "", fmt.Errorf("reading the welcome: %v (%q)", err, welcome.T)
	}
	ws.SetReadDeadline(time.Time{})
	return ws, welcome.Instance, nil
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

func (c colyseusProtocol) join(ctx context.Context) (*websocket.Conn, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.addr+"/matchmake/joinOrCreate/"+c.room, strings.NewReader("{}"))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("reserving a seat: %w", err)
	}
	defer resp.Body.Close()
	var seat struct {
		SessionID string `json:"sessionId"`
		RoomID    string `json:"roomId"`
		ProcessID string `json:"processId"`
		Error     string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&seat); err != nil || resp.StatusCode != http.StatusOK || seat.RoomID == "" {
		return nil, "", fmt.Errorf("reserving a seat: %s %v %s", resp.Status, err, seat.Error)
	}
	ws, _, err := dialer.DialContext(ctx, "ws://"+c.addr+"/"+seat.ProcessID+"/"+seat.RoomID+"?sessionId="+seat.SessionID, nil)
	if err != nil {
		return nil, "", fmt.Errorf("dialing the room: %w", err)
	}
	return ws, seat.RoomID, nil
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
