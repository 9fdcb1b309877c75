package main

// The bots against servers this program did not start: bench/relay.sh starts
// two fleet nodes and runs
//
//	bench-load -write-game ROOT/hoster-games -capacity 21
//	bench-load -url ws://B -hold ws://A -rooms 15 -players 300 -measure A=PID,B=PID
//
// the first to put the load game into each node's hosting root before it
// starts, the second for each measured case: one player per private room
// joins at -hold first and stays (so that node owns the rooms), then the bots
// join those rooms at -url; the CPU of each -measure process tree (a node's
// parent and its game workers) is read from /proc over the window.

import (
	"context"
	"flag"
	"fmt"
	"log"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

var (
	writeGameTo = flag.String("write-game", "", "write the load game (with -capacity, -entities, -tick, ...) under this games root, generate it, and exit")
	externalURL = flag.String("url", "", "instead of starting a server, the bots dial the hoster-server at this address (ws://host:port), as players reaching that node")
	holdURL     = flag.String("hold", "", "with -url: first one player per room joins at this address (ws://host:port) and stays, so that node owns the rooms")
	roomCount   = flag.Int("rooms", 0, "with -url: the bots join this many private rooms (?room=r0, r1, ...), in turn (0: public placement)")
	measure     = flag.String("measure", "", "with -url: the processes whose CPU (with their children's) is measured, as name=pid,name=pid")
)

// external runs the bots against the server at *externalURL and prints a
// RESULT line with each measured process tree's CPU.
func external(g loadGame, players, moveRate, seconds int) {
	trees, err := parseMeasure(*measure)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var waits []func()
	defer func() { cancel(); waitAll(waits) }()
	holders := int64(0)
	if *holdURL != "" {
		for k := range *roomCount {
			st, w := runBots(ctx, hosterProtocol{url: *holdURL + "/load", host: "load.example", compact: g.compact, query: roomQuery(k)}, 1, moveRate, g.send)
			waits = append(waits, w)
			holders += st.connected.Load()
		}
	}
	proto := protocol(hosterProtocol{url: *externalURL + "/load", host: "load.example", compact: g.compact})
	if *roomCount > 0 {
		proto = roomsProtocol{hosterProtocol: proto.(hosterProtocol), rooms: *roomCount, next: &atomic.Int64{}}
	}
	st, w := runBots(ctx, proto, players, moveRate, g.send)
	waits = append(waits, w)
	time.Sleep(2 * time.Second) // let the joins settle
	cpu0 := trees.cpu()
	wall0 := time.Now()
	st.startMeasuring()
	time.Sleep(time.Duration(seconds) * time.Second)
	st.measuring.Store(false)
	cpu1, wall := trees.cpu(), time.Since(wall0)
	n := st.connected.Load()
	var cores []string
	for _, t := range trees {
		cores = append(cores, fmt.Sprintf("cpu_%s=%.4f", t.name, (cpu1[t.name]-cpu0[t.name]).Seconds()/wall.Seconds()))
	}
	fmt.Printf("RESULT players=%d connected=%d holders=%d rooms=%d seconds=%.1f ups=%.2f bpu=%.0f thrown=%d silent=%d %s\n",
		players, n, holders, *roomCount, wall.Seconds(), float64(st.updates.Load())/float64(max(n, 1))/wall.Seconds(),
		float64(st.received.Load())/float64(max(st.updates.Load(), 1)), st.thrown.Load(), st.silent.Load(), strings.Join(cores, " "))
}

// roomQuery is the k-th private room's part of a socket URL's query.
func roomQuery(k int) string { return "room=r" + strconv.Itoa(k) }

// roomsProtocol is hoster's protocol with each join in the next of rooms
// private rooms, in turn: n bots fill them evenly.
type roomsProtocol struct {
	hosterProtocol
	rooms int
	next  *atomic.Int64
}

func (p roomsProtocol) join(ctx context.Context, resume string) (*websocket.Conn, joined, error) {
	h := p.hosterProtocol
	h.query = p.nextRoom()
	return h.join(ctx, resume)
}

// nextRoom is the query of the room the next join goes to.
func (p roomsProtocol) nextRoom() string {
	return roomQuery(int((p.next.Add(1) - 1) % int64(p.rooms)))
}

// A tree is a process measured with its children: a node's parent and its
// game workers.
type tree struct {
	name string
	pid  int
}

type trees []tree

// parseMeasure reads -measure: name=pid pairs, comma-separated.
func parseMeasure(s string) (trees, error) {
	var out trees
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		name, p, ok := strings.Cut(f, "=")
		pid, err := strconv.Atoi(p)
		if !ok || name == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("reading -measure: %q is not name=pid", f)
		}
		out = append(out, tree{name, pid})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// cpu is each tree's CPU time so far, by name.
func (ts trees) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, t := range ts {
		d, err := treeCPU(t.pid)
		if err != nil {
			log.Fatalf("measuring %s: %v", t.name, err)
		}
		out[t.name] = d
	}
	return out
}
