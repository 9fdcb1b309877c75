package runtime

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readSet reads the commands of every player's socket that gives its
// descriptor, in the whole process, from one epoll set instead of a
// goroutine parked on each socket, which Go's poller woke for each
// command (10,000 a second at 1,000 players). A socket in the set has left
// Go's poller (detach). Its commands are read in passes (drain): by the
// scheduler's workers before each step (readPending), and by the set's
// own goroutine (run), which waits in epoll_wait on a thread of its own
// and, once a socket has something, lets readPause go by before its pass.
// A socket's frames are taken by its frameReader as before (same checks,
// limits and closes); a socket is read by one goroutine at a time (its
// mu), and leaves the set when it ends or is closed, before its
// descriptor is. A write that must wait for a slow socket waits for the
// set to see it writable (waitWritable).
type readSet struct {
	epfd int

	mu      sync.Mutex
	byFD    map[int32]*sockReader
	size    atomic.Int32 // len(byFD)
	sweeper *time.Timer  // ends silent sockets; nil while the set is empty

	drainMu sync.Mutex // one drain at a time: it owns events
	events  []unix.EpollEvent
}

// sweepEvery is how often the set looks for sockets silent past their
// deadline.
const sweepEvery = time.Second

// sockReader is one socket in the set: its frameReader and what takes its
// frames, and ended, called once when it is done with (why: a close
// frame's *websocket.CloseError, a protocol error, a silent or closed
// socket).
type sockReader struct {
	set      *readSet
	fd       int32        // the set's duplicate of the socket's descriptor
	deadline atomic.Int64 // unix nanoseconds; the socket is ended once silent past it
	writable chan struct{}
	wantOut  bool // a write waits for the socket: the set watches for EPOLLOUT (set.mu)

	mu        sync.Mutex // held while it is read or ended
	done      bool
	f         frameReader
	message   func(int, []byte) bool
	ping      func([]byte)
	pong      func([]byte)
	closeWith func(int, string)
	ended     func(error)
}

// detach takes c out of Go's poller: a duplicate of its descriptor for
// the set, and what closes c's own (Go's poller forgets it then); ok
// false when c cannot be detached.
func detach(c net.Conn) (fd int, closeOwn func() error, ok bool) {
	switch t := c.(type) {
	case Detacher:
		closeOwn = t.CloseDescriptor
	case *net.TCPConn:
		closeOwn = t.Close
	case *net.UnixConn:
		closeOwn = t.Close
	default:
		return -1, nil, false
	}
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return -1, nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, nil, false
	}
	fd = -1
	rc.Control(func(own uintptr) {
		fd, err = unix.FcntlInt(own, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err != nil || fd < 0 {
		return -1, nil, false
	}
	return fd, closeOwn, true
}

var (
	theReadSet  atomic.Pointer[readSet]
	readSetOnce sync.Once
)

// sockets is the process's read set, nil where none could be made (each
// socket then has a reading goroutine of its own).
func sockets() *readSet {
	readSetOnce.Do(func() {
		s, err := newReadSet()
		if err == nil {
			theReadSet.Store(s)
			go s.run()
		}
	})
	return theReadSet.Load()
}

// readPending reads the sockets that have something, if any: the
// scheduler calls it before each step, so that the commands due for the
// step are read by a goroutine that runs anyway. A pass under way (another
// worker's, or the set's) reads them already: waiting for it held every
// worker behind it, and at 3,500 players on the worker's one core cost
// 0.5 updates a player a second.
func readPending() {
	if s := theReadSet.Load(); s != nil && s.size.Load() > 0 && s.drainMu.TryLock() {
		s.drainLocked()
		s.drainMu.Unlock()
	}
}

// readPause is how long the set's goroutine lets sockets gather commands
// once one has something, before it reads them all in one pass: a wakeup
// for a few dozen commands at 1,000 players instead of one each. A
// command does not wait for it to reach its tick: the scheduler reads the
// sockets before each step (readPending). Measured at 1,000 players
// (bench-load, 2 cores): 5 ms 0.28–0.31 cores, 20 ms 0.29–0.32, no pause
// 0.41–0.43 (a thread woken for each command), against 0.33–0.38 for
// waiting on Go's poller.
const readPause = 5 * time.Millisecond

func newReadSet() (*readSet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	return &readSet{epfd: epfd, byFD: map[int32]*sockReader{}, events: make([]unix.EpollEvent, 256)}, nil
}

// newSockReader is the reader of fd (a socket's duplicate descriptor,
// see detach) for the set, not yet in it; nil when there is no set.
func newSockReader(fd int, limit int64) *sockReader {
	s := sockets()
	if s == nil {
		return nil
	}
	return &sockReader{set: s, fd: int32(fd), f: frameReader{limit: limit}, writable: make(chan struct{}, 1)}
}

// moveDeadline gives the socket three ping periods from now.
func (r *sockReader) moveDeadline() {
	r.deadline.Store(time.Now().Add(3 * pingEvery).UnixNano())
}

// start puts r in the set; false when it could not be (the caller reads
// the socket itself).
func (r *sockReader) start(message func(int, []byte) bool, ping, pong func([]byte), closeWith func(int, string), ended func(error)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done { // closed before it started
		return false
	}
	r.message, r.ping, r.pong, r.closeWith, r.ended = message, ping, pong, closeWith, ended
	r.moveDeadline()
	s := r.set
	s.mu.Lock()
	defer s.mu.Unlock()
	// Level-triggered: a socket left with bytes to read (a drain that
	// stopped early, bytes that came before it joined) is reported again.
	ev := unix.EpollEvent{Events: readEvents, Fd: r.fd}
	if unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, int(r.fd), &ev) != nil {
		return false
	}
	s.byFD[r.fd] = r
	s.size.Store(int32(len(s.byFD)))
	if s.sweeper == nil {
		s.sweeper = time.AfterFunc(sweepEvery, s.sweep)
	}
	return true
}

// run waits for sockets with something to read and reads them, until the
// process ends.
func (s *readSet) run() {
	one := make([]unix.EpollEvent, 1)
	for {
		// Level-triggered: waiting for one socket leaves its event for drain.
		if n, err := unix.EpollWait(s.epfd, one, -1); n <= 0 {
			if err != nil && err != unix.EINTR {
				return
			}
			continue
		}
		time.Sleep(readPause)
		s.drain()
	}
}

// drain reads every socket the set reports ready, and returns how many.
func (s *readSet) drain() int {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	return s.drainLocked()
}

// drainLocked is drain with drainMu held.
func (s *readSet) drainLocked() int {
	n, err := unix.EpollWait(s.epfd, s.events, 0)
	if err != nil {
		return 0 // EINTR: the next readiness calls again
	}
	for _, ev := range s.events[:n] {
		s.mu.Lock()
		r := s.byFD[ev.Fd]
		if r != nil && r.wantOut && ev.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			r.wantOut = false
			e := unix.EpollEvent{Events: readEvents, Fd: r.fd}
			unix.EpollCtl(s.epfd, unix.EPOLL_CTL_MOD, int(r.fd), &e)
			r.wake()
		}
		s.mu.Unlock()
		if r != nil && ev.Events&^unix.EPOLLOUT != 0 {
			r.serve()
		}
	}
	return n
}

// readEvents are what the set watches a socket for while no write waits.
const readEvents = unix.EPOLLIN | unix.EPOLLRDHUP

func (r *sockReader) wake() {
	select {
	case r.writable <- struct{}{}:
	default:
	}
}

// waitWritable waits until the socket may take more, or until; the set
// watches for it while the socket is in it, else poll(2) does.
func (r *sockReader) waitWritable(until time.Time) error {
	s := r.set
	s.mu.Lock()
	in := s.byFD[r.fd] == r
	if in {
		r.wantOut = true
		ev := unix.EpollEvent{Events: readEvents | unix.EPOLLOUT, Fd: r.fd}
		if unix.EpollCtl(s.epfd, unix.EPOLL_CTL_MOD, int(r.fd), &ev) != nil {
			in, r.wantOut = false, false
		}
	}
	s.mu.Unlock()
	wait := time.Until(until)
	if wait <= 0 {
		return os.ErrDeadlineExceeded
	}
	if !in {
		pfd := []unix.PollFd{{Fd: r.fd, Events: unix.POLLOUT}}
		n, err := unix.Poll(pfd, int(wait.Milliseconds())+1)
		switch {
		case err == unix.EINTR:
			return nil // the caller writes again, and calls again
		case err != nil:
			return err
		case n == 0:
			return os.ErrDeadlineExceeded
		}
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.writable:
		return nil
	case <-t.C:
		return os.ErrDeadlineExceeded
	}
}

// writeFD is one write(2) of p on fd, which never blocks (the socket is
// non-blocking); errWouldBlock when it took nothing.
func writeFD(fd int, p []byte) (int, error) {
	for {
		n, err := unix.Write(fd, p)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, errWouldBlock
		}
		return max(n, 0), err
	}
}

// serve reads what the socket has and hands its frames on; a socket that
// is done with leaves the set.
func (r *sockReader) serve() {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	over := r.f.readReady(uintptr(r.fd), r.message, r.ping, r.pong, r.closeWith)
	if over {
		r.leaveLocked()
	}
	r.mu.Unlock()
	if over {
		r.ended(r.f.err)
	}
}

// leaveLocked takes r out of the set, while its descriptor is still open.
// r.mu is held.
func (r *sockReader) leaveLocked() {
	r.done = true
	s := r.set
	s.mu.Lock()
	if s.byFD[r.fd] == r {
		delete(s.byFD, r.fd)
		s.size.Store(int32(len(s.byFD)))
		unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, int(r.fd), nil)
	}
	r.wake() // a write waiting for the socket waits with poll(2) now
	if len(s.byFD) == 0 && s.sweeper != nil {
		s.sweeper.Stop()
		s.sweeper = nil
	}
	s.mu.Unlock()
}

// closing is called before the socket's descriptor is closed; it returns
// what ends the reader after the close, nil when it had already ended.
func (r *sockReader) closing() func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || r.ended == nil { // ended, or never started (and now never will)
		r.done = true
		return nil
	}
	r.leaveLocked()
	return func() { r.ended(net.ErrClosed) }
}

// errSilent ends a socket silent for 3 ping periods.
var errSilent = errors.New("the player's socket was silent for 3 ping periods")

// sweep ends the sockets silent past their deadline, and runs again
// while the set has sockets.
func (s *readSet) sweep() {
	now := time.Now().UnixNano()
	var late []*sockReader
	s.mu.Lock()
	for _, r := range s.byFD {
		if r.deadline.Load() < now {
			late = append(late, r)
		}
	}
	if s.sweeper != nil {
		s.sweeper.Reset(sweepEvery)
	}
	s.mu.Unlock()
	for _, r := range late {
		r.mu.Lock()
		if r.done {
			r.mu.Unlock()
			continue
		}
		r.f.err = errSilent
		r.leaveLocked()
		r.mu.Unlock()
		r.ended(errSilent)
	}
}

func closeFD(fd int) { unix.Close(fd) }
