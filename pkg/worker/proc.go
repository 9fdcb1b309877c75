package worker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hoster-dev/hoster/pkg/accesslog"
	"github.com/hoster-dev/hoster/pkg/runtime"
	"golang.org/x/sys/unix"
)

// Close codes of DESIGN.md for a worker's players.
const (
	CodeOutOfMemory = runtime.CodeOutOfMemory // the game ran out of its memory budget
	CodeEnded       = 4004                    // the game's worker ended (crash or killed)
)

// proc is one running worker.
type proc struct {
	p       *Pool
	s       *slot
	cmd     *exec.Cmd
	ch      *channel
	log     *slog.Logger
	budget  int64
	group   *group // its cgroups, nil when none bounds it
	retired bool   // guarded by the pool's mu: takes no more sockets
	version string // guarded by the pool's mu: the ID of the version it was last given
	done    chan struct{}

	stopping atomic.Bool  // a requested end (shutdown, retirement)
	process  atomic.Value // its telemetry process id (string)
	oomOut   atomic.Bool  // its output said Go ran out of memory
	memBy    atomic.Value // what ended it for its memory (string)

	mu     sync.Mutex
	reason string             // why the parent ended it, "" if it did not
	conns  map[uint64]*handed // the sockets handed to it and not yet done with
	nextID uint64
	gone   bool // exited: sockets still handed are closed here
}

// handed is a socket handed to a worker.
type handed struct {
	fd      int              // the parent's own descriptor of it
	ended   func()           // called once the worker is done with it, or gone
	room    func(spent bool) // settles the room taken for it (rooms.grant); nil: none
	settled sync.Once
}

// settle is told, once, whether the worker spent the room taken for the
// socket (msgSettled): one not spent goes back to its address.
func (h *handed) settle(spent bool) {
	h.settled.Do(func() {
		if h.room != nil {
			h.room(spent)
		}
	})
}

// start spawns s's worker and gives it the game's running version. The
// pool's mu is held.
func (p *Pool) start(s *slot) (*proc, error) {
	domain, game, _ := strings.Cut(s.key, "/")
	src, ok, stale := p.o.Source(domain, game)
	if !ok {
		return nil, fmt.Errorf("starting the worker: the game is not loaded")
	}
	budget := p.o.Budget(domain, game)
	mine, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	ch, err := newChannel(mine)
	mine.Close()
	if err != nil {
		return nil, err
	}
	args := append(append([]string{}, p.o.Command[1:]...), "--game", s.key, "--memory", fmt.Sprint(budget))
	cmd := exec.Command(p.o.Command[0], args...)
	cmd.ExtraFiles = []*os.File{theirs} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	wk := &proc{p: p, s: s, cmd: cmd, ch: ch, budget: budget, conns: map[uint64]*handed{}, done: make(chan struct{}),
		log: p.log.With("game", s.key)}
	fd, err := wk.enterCgroups()
	if err != nil {
		ch.close()
		return nil, err
	}
	if fd != nil {
		defer fd.Close()
	}
	stderr, err := cmd.StderrPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		ch.close()
		if wk.group != nil {
			wk.group.remove()
		}
		return nil, fmt.Errorf("starting the worker: %w", err)
	}
	wk.log = wk.log.With("worker", cmd.Process.Pid)
	wk.log.Info("game worker started", "budget", budget, "version", src.ID)
	if stale != nil {
		wk.log.Warn("game worker runs the game's last good version: its newest files did not load", "version", src.ID, "reason", stale)
	}
	relayed := make(chan struct{})
	go func() { defer close(relayed); wk.relayLog(stderr) }()
	read := make(chan struct{})
	go wk.readControl(read)
	go wk.watch()
	go wk.wait(relayed, read)
	// The version goes first: every socket handed after it finds the game.
	if err := wk.sendVersion(src); err != nil {
		wk.stopping.Store(true)
		cmd.Process.Kill()
		return nil, err
	}
	return wk, nil
}

// sendVersion gives the worker src to run, in a memfd: a game's code may
// be larger than a control message. The pool's mu is held.
func (wk *proc) sendVersion(src runtime.Source) error {
	b, err := json.Marshal(src)
	if err != nil {
		return fmt.Errorf("encoding the game's version: %w", err)
	}
	fd, err := unix.MemfdCreate("hoster-version", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("making a memfd for the game's version: %w", err)
	}
	f := os.NewFile(uintptr(fd), "version")
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("writing the game's version to its memfd: %w", err)
	}
	if err := wk.ch.send(message{T: msgVersion}, fd); err != nil {
		return err
	}
	wk.version = src.ID
	return nil
}

// enterCgroups makes the worker's cgroups, if any bounds it: it starts in
// its cgroup v2 group (UseCgroupFD: the group's directory, returned open
// to be closed once it started), and joins its v1 groups itself (--cgroup)
// before its game loads. The pool's mu is held.
func (wk *proc) enterCgroups() (*os.File, error) {
	wk.p.seq++
	g, err := wk.p.cg.group(fmt.Sprintf("w%d", wk.p.seq), wk.budget)
	if err != nil || g == nil {
		return nil, err
	}
	wk.group = g
	for _, d := range g.v1() {
		wk.cmd.Args = append(wk.cmd.Args, "--cgroup", d)
	}
	if g.v2 == "" {
		return nil, nil
	}
	f, err := os.Open(g.v2)
	if err != nil {
		g.remove()
		return nil, fmt.Errorf("opening cgroup %s: %w", g.v2, err)
	}
	wk.cmd.SysProcAttr.UseCgroupFD, wk.cmd.SysProcAttr.CgroupFD = true, int(f.Fd())
	return f, nil
}

// hand gives the worker a game socket the parent upgraded: the
// connection's descriptor and what serving it needs, and returns; end is
// called once the worker is done with it (so the socket counts for its
// address until then), and the access log writes its line then, as for a
// socket served in the parent. No goroutine of the parent waits for each
// socket. The parent keeps a descriptor of its own of the socket,
// unwatched, to close the connection with a code should the worker end.
func (wk *proc) hand(hs runtime.Handed, end func()) {
	fd, relayed, err := socketFD(hs.Conn)
	if !relayed {
		hs.Conn.Close() // the worker's and the parent's descriptors stay
	}
	if err != nil {
		wk.log.Warn("handing a socket to its worker", "err", err)
		end()
		return
	}
	if len(hs.Query) > maxMessage-1<<10 {
		closeWith(fd, 1009, "the request's query is too long")
		end()
		return
	}
	h := &handed{fd: fd, room: wk.p.rooms.grant(hs.Addr)}
	wk.mu.Lock()
	if wk.gone {
		wk.mu.Unlock()
		h.settle(false)
		closeWith(fd, CodeEnded, reasonEnded)
		end()
		return
	}
	wk.nextID++
	id := wk.nextID
	logged := accesslog.Hold(hs.Request)
	h.ended = func() { end(); logged() }
	wk.conns[id] = h
	wk.mu.Unlock()
	if err := wk.ch.send(message{T: msgConn, ID: id, Sock: &hs.Adopted, OK: h.room != nil}, fd); err != nil {
		wk.log.Warn("handing a socket to its worker", "err", err)
		wk.drop(id, CodeEnded, reasonEnded)
	}
}

// socketFD is a descriptor of nc's socket of the parent's own,
// close-on-exec and outside Go's poller. A connection that is not a plain
// socket (TLS served by the parent) is relayed: the worker gets one end of
// a socket pair whose other end the parent copies to and from nc.
func socketFD(nc net.Conn) (fd int, relayed bool, err error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		fd, err := relay(nc)
		return fd, err == nil, err
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, false, err
	}
	fd = -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, false, err
	}
	return fd, false, derr
}

// relay connects nc to a new socket pair and returns the worker's end.
func relay(nc net.Conn) (int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("making a relay: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "relay")
	near, err := net.FileConn(f)
	f.Close()
	if err != nil {
		unix.Close(fds[1])
		return -1, fmt.Errorf("making a relay: %w", err)
	}
	go func() { io.Copy(nc, near); nc.Close() }()
	go func() { io.Copy(near, nc); near.Close() }()
	return fds[1], nil
}

// closeWith ends a handed socket from the parent: a close frame with code
// and reason (the worker is gone: nothing else writes on it), then close.
func closeWith(fd, code int, reason string) {
	frame := []byte{0x88, byte(2 + len(reason))}
	frame = binary.BigEndian.AppendUint16(frame, uint16(code))
	frame = append(frame, reason...)
	unix.Write(fd, frame) // one small write; a socket that cannot take it is closed anyway
	unix.Close(fd)
}

// drop forgets a handed socket; with a code, the parent closes it with one.
func (wk *proc) drop(id uint64, code int, reason string) {
	wk.mu.Lock()
	h, ok := wk.conns[id]
	delete(wk.conns, id)
	wk.mu.Unlock()
	if ok {
		h.end(code, reason)
	}
}

// end closes the parent's descriptor of a handed socket, with a code after
// a close frame with it. Then its end is told (the address's count, the access log's
// line), and a room taken for it and not settled goes back.
func (h *handed) end(code int, reason string) {
	h.settle(false)
	if code == 0 {
		unix.Close(h.fd)
	} else {
		closeWith(h.fd, code, reason)
	}
	h.ended()
}
