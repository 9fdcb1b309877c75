package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hoster-dev/hoster/pkg/runtime"
)

// ChildOptions configure the worker side (hoster-server worker).
type ChildOptions struct {
	// Control is the control socket the parent passed (file descriptor 3).
	Control *os.File
	// Runtime configures the game's runtime; its Game names the game.
	Runtime runtime.Options
	// Memory is the budget in bytes (0: none), Nice the CPU priority to
	// lower to.
	Memory int64
	Nice   int
	// Cgroups are the cgroup v1 groups the worker joins as it starts,
	// before its game loads (serve's pool makes them).
	Cgroups []string
	// GCPercent is the collector's GOGC, as the parent sets its own (0:
	// left as it is: Go's default, or an operator's GOGC the worker
	// inherited). Game instances allocate on every tick and send round: at
	// Go's default of 100 a worker collected about three times as often as
	// the same game in serve's process (bench/isolation-cost.sh).
	GCPercent int
	// Idle is how long the worker stays with no instance before it offers
	// to end.
	Idle time.Duration
}

// child is a running worker.
type child struct {
	ch    *channel
	rt    *runtime.Runtime
	log   *slog.Logger
	open  atomic.Int64 // handed sockets not yet closed
	end   chan string  // why the worker ends: retired or shut down
	once  sync.Once
	retir atomic.Bool

	// The parent's versions and removals are carried out in order on a
	// goroutine of their own, so that the control socket is read meanwhile
	// (the answers to room requests, which a placement may wait for while
	// a removal waits for the placement); ready is closed once the first
	// version was, and sockets wait for it.
	loads chan func()
	ready chan struct{}

	roomMu  sync.Mutex
	rooms   map[uint64]chan bool // room requests waiting for the parent's answer
	roomSeq uint64
}

// roomWait bounds how long a new instance waits for the parent's answer
// to its room request: the parent answers at once unless it is gone.
const roomWait = 10 * time.Second

// Serve runs a worker until the parent shuts it down, retires it, or goes
// away. A hook stuck past its interrupt ends the process at once (exit
// status 3), after telling the parent.
//
// The stop signals are the parent's: systemd sends SIGTERM to every process
// of the service, and a terminal's Ctrl-C sends SIGINT to the whole job, but
// the worker ends when the parent says (its players then get the going-away
// close, not the code of a crash), or dies with it (Pdeathsig).
func Serve(o ChildOptions) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	for _, dir := range o.Cgroups {
		// "0" is the process writing: all its threads move.
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", dir, err)
		}
	}
	if err := limitSelf(o.Memory, o.Nice, o.GCPercent); err != nil {
		return err
	}
	procs := setProcs(os.Getenv)
	ch, err := newChannel(o.Control)
	if err != nil {
		return err
	}
	c := &child{ch: ch, log: o.Runtime.Logger, end: make(chan string, 1),
		loads: make(chan func(), 16), ready: make(chan struct{}), rooms: map[uint64]chan bool{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	o.Runtime.TakeRoom = c.takeRoom
	gogc := "inherited"
	if o.GCPercent > 0 {
		gogc = strconv.Itoa(o.GCPercent)
	}
	c.log.Info("game worker limits", "memory", o.Memory, "nice", o.Nice, "gogc", gogc, "gomaxprocs", procs)
	o.Runtime.Stuck = func(reason string) {
		c.log.Error("a hook did not stop when interrupted: ending the worker", "reason", reason)
		ch.send(message{T: msgStuck, Reason: reason}, -1)
		os.Exit(3)
	}
	if c.rt, err = runtime.New(o.Runtime); err != nil {
		return err
	}
	if err := ch.send(message{T: msgHello, Process: c.rt.Process()}, -1); err != nil {
		return err
	}
	go c.watchIdle(o.Idle)
	go c.load()
	go c.readControl(o.Runtime.Game)
	why := <-c.end
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.log.Info("worker ending", "why", why)
	return c.rt.Shutdown(ctx)
}

func (c *child) finish(why string) { c.once.Do(func() { c.end <- why }) }

// readControl carries out the parent's messages until the socket closes.
func (c *child) readControl(game string) {
	domain, name, _ := strings.Cut(game, "/")
	for {
		m, fd, err := c.ch.recv()
		if err != nil {
			c.finish("the parent went away")
			return
		}
		switch m.T {
		case msgConn:
			if fd < 0 || m.Sock == nil {
				c.log.Warn("a socket message without its socket or what serving it needs")
				continue
			}
			c.open.Add(1)
			go c.serve(m, fd)
		case msgVersion:
			src, err := readVersion(fd)
			if err != nil {
				c.log.Error("reading the game's version from the server", "err", err)
				continue
			}
			c.loads <- func() { c.rt.Install(domain, name, src) }
		case msgRemove:
			c.loads <- func() { c.rt.Remove(domain, name) }
		case msgRoom:
			c.roomMu.Lock()
			if reply, ok := c.rooms[m.ID]; ok {
				reply <- m.OK
				delete(c.rooms, m.ID)
			}
			c.roomMu.Unlock()
		case msgRetire:
			c.retir.Store(true)
		case msgShutdown:
			c.finish("shut down")
		}
		if fd >= 0 && m.T != msgConn && m.T != msgVersion {
			os.NewFile(uintptr(fd), "stray").Close()
		}
	}
}

// setProcs gives the worker as many Ps as the machine has cores, unless
// the operator set GOMAXPROCS, and returns the number. Go would follow the
// worker's CPU bound (--cpus; 1 core on 2), and one P measured 6–7% more
// CPU at 1,000 players than two (bench/isolation-cost.sh, where two made
// process mode cost what one process does); the kernel holds the bound
// either way.
func setProcs(getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" {
		return goruntime.GOMAXPROCS(0)
	}
	n := goruntime.NumCPU()
	goruntime.GOMAXPROCS(n)
	return n
}

// load carries out the parent's versions and removals, in order.
func (c *child) load() {
	var first sync.Once
	for f := range c.loads {
		f()
		first.Do(func() { close(c.ready) })
	}
}

// readVersion reads the runtime.Source in the memfd fd, and closes it.
func readVersion(fd int) (runtime.Source, error) {
	var src runtime.Source
	if fd < 0 {
		return src, errors.New("no memfd came with the message")
	}
	f := os.NewFile(uintptr(fd), "version")
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return src, err
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return src, err
	}
	if err := json.Unmarshal(b, &src); err != nil {
		return src, fmt.Errorf("decoding it: %w", err)
	}
	return src, nil
}

// takeRoom asks the parent whether addr may start a new instance: the
// parent counts new rooms per address for every game (Options.TakeRoom of
// the runtime). No answer, the parent gone, is a refusal.
func (c *child) takeRoom(addr string) bool {
	reply := make(chan bool, 1)
	c.roomMu.Lock()
	c.roomSeq++
	id := c.roomSeq
	c.rooms[id] = reply
	c.roomMu.Unlock()
	defer func() {
		c.roomMu.Lock()
		delete(c.rooms, id)
		c.roomMu.Unlock()
	}()
	if err := c.ch.send(message{T: msgRoom, ID: id, Addr: addr}, -1); err != nil {
		c.log.Warn("asking the server for a new room", "err", err)
		return false
	}
	select {
	case ok := <-reply:
		return ok
	case <-time.After(roomWait):
		c.log.Warn("asking the server for a new room: no answer", "within", roomWait)
		return false
	}
}

// watchIdle offers the parent to end once the worker has had no instance
// and no socket for idle; retired, it ends as soon as it has neither.
func (c *child) watchIdle(idle time.Duration) {
	every := max(idle/4, 10*time.Millisecond)
	var since time.Time
	offered := false
	for range time.Tick(every) {
		busy := c.rt.Instances() > 0 || c.open.Load() > 0
		switch {
		case busy:
			since, offered = time.Time{}, false
		case c.retir.Load():
			c.finish("idle")
			return
		case since.IsZero():
			since = time.Now()
		case !offered && time.Since(since) >= idle:
			c.ch.send(message{T: msgIdle}, -1)
			offered = true
		}
	}
}

// serve runs one handed socket, once the game's first version is loaded:
// a WebSocket its parent upgraded, which the runtime adopts.
func (c *child) serve(m message, fd int) {
	<-c.ready
	var settle runtime.RoomSettle
	if m.OK { // the parent took a room for it
		settle = func(spent bool) { c.ch.send(message{T: msgSettled, ID: m.ID, OK: spent}, -1) }
	}
	var once sync.Once
	conn := &handedConn{File: os.NewFile(uintptr(fd), "game socket"), done: func() { once.Do(func() { c.closed(m.ID) }) }}
	c.rt.Adopt(conn, *m.Sock, settle)
}

func (c *child) closed(id uint64) {
	c.open.Add(-1)
	c.ch.send(message{T: msgClosed, ID: id}, -1)
}

// handedConn is a handed socket, served through the *os.File of its
// descriptor, which Go's poller reads, writes and times out as it does a
// net.Conn's, and whose SyscallConn keeps the runtime's reads and writes on
// the descriptor. (net.FileConn would copy the descriptor and ask the
// kernel the socket's type and both its addresses, which nothing here
// needs, and the file it was made from would be closed again: eight system
// calls a join more, in a burst of joins on the worker's busy core.) Its
// Close tells the parent the socket is done with.
type handedConn struct {
	*os.File
	done func()
}

func (c *handedConn) Close() error { err := c.File.Close(); c.done(); return err }

// CloseDescriptor closes the socket's descriptor in Go's poller once the
// runtime's read set holds a duplicate of it (runtime.Detacher): the
// socket is not done with until Close.
func (c *handedConn) CloseDescriptor() error { return c.File.Close() }

// LocalAddr and RemoteAddr stand for addresses nothing asks a handed
// socket: its parent knew them (the address the bounds count comes in its
// message).
func (c *handedConn) LocalAddr() net.Addr  { return handedAddr{} }
func (c *handedConn) RemoteAddr() net.Addr { return handedAddr{} }

type handedAddr struct{}

func (handedAddr) Network() string { return "tcp" }
func (handedAddr) String() string  { return "handed by the parent" }
