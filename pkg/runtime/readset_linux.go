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
// goroutine parked on each socket: a burst of commands on many sockets is
// one wakeup of one goroutine (run), not one per socket. The set's own
// descriptor is pollable, so that goroutine waits on Go's poller without
// holding a thread. A socket's frames are taken by its frameReader as
// before (same checks, limits and closes); a socket is read by one
// goroutine at a time (its mu), and leaves the set when it ends or is
// closed, before its descriptor is.
type readSet struct {
	epfd int
	poll syscall.RawConn // epfd as Go's poller waits on it

	mu      sync.Mutex
	byFD    map[int32]*sockReader
	sweeper *time.Timer // ends silent sockets; nil while the set is empty

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
	fd       int32
	rc       syscall.RawConn
	deadline atomic.Int64 // unix nanoseconds; the socket is ended once silent past it

	mu        sync.Mutex // held while it is read or ended
	done      bool
	f         frameReader
	message   func(int, []byte) bool
	ping      func([]byte)
	pong      func([]byte)
	closeWith func(int, string)
	ended     func(error)
}

var (
	theReadSet  *readSet
	readSetOnce sync.Once
)

// sockets is the process's read set, nil where none could be made (each
// socket then has a reading goroutine of its own).
func sockets() *readSet {
	readSetOnce.Do(func() {
		s, err := newReadSet()
		if err == nil {
			theReadSet = s
			go s.run()
		}
	})
	return theReadSet
}

func newReadSet() (*readSet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	rc, err := os.NewFile(uintptr(epfd), "player sockets").SyscallConn()
	if err != nil {
		return nil, err
	}
	return &readSet{epfd: epfd, poll: rc, byFD: map[int32]*sockReader{}, events: make([]unix.EpollEvent, 256)}, nil
}

// newSockReader is rc's reader for the set, not yet in it; nil when
// there is no set.
func newSockReader(rc syscall.RawConn, limit int64) *sockReader {
	s := sockets()
	if s == nil {
		return nil
	}
	r := &sockReader{set: s, rc: rc, f: frameReader{limit: limit}}
	if rc.Control(func(fd uintptr) { r.fd = int32(fd) }) != nil {
		return nil
	}
	return r
}

// moveDeadline gives the socket three ping periods from now.
func (r *sockReader) moveDeadline() {
	r.deadline.Store(time.Now().Add(3 * pingEvery).UnixNano())
}

// start puts r in the set; false when it could not be (the caller reads
// the socket itself).
func (r *sockReader) start(message func(int, []byte) bool, ping, pong func([]byte), closeWith func(int, string), ended func(error)) bool {
	r.message, r.ping, r.pong, r.closeWith, r.ended = message, ping, pong, closeWith, ended
	r.moveDeadline()
	s := r.set
	s.mu.Lock()
	defer s.mu.Unlock()
	// Level-triggered: a socket left with bytes to read (a drain that
	// stopped early, bytes that came before it joined) is reported again.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: r.fd}
	if unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, int(r.fd), &ev) != nil {
		return false
	}
	s.byFD[r.fd] = r
	if s.sweeper == nil {
		s.sweeper = time.AfterFunc(sweepEvery, s.sweep)
	}
	return true
}

// run waits for sockets with something to read and reads them, until the
// process ends.
func (s *readSet) run() {
	for {
		s.poll.Read(func(uintptr) bool {
			for s.drain() > 0 {
			}
			return false // nothing left: wait on Go's poller
		})
	}
}

// drain reads every socket the set reports ready, and returns how many.
func (s *readSet) drain() int {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	n, err := unix.EpollWait(s.epfd, s.events, 0)
	if err != nil {
		return 0 // EINTR: the next readiness calls again
	}
	for _, ev := range s.events[:n] {
		s.mu.Lock()
		r := s.byFD[ev.Fd]
		s.mu.Unlock()
		if r != nil {
			r.serve()
		}
	}
	return n
}

// serve reads what the socket has and hands its frames on; a socket that
// is done with leaves the set.
func (r *sockReader) serve() {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	over := false
	err := r.rc.Control(func(fd uintptr) {
		over = r.f.readReady(fd, r.message, r.ping, r.pong, r.closeWith)
	})
	if err != nil && !over {
		r.f.err, over = err, true
	}
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
		unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, int(r.fd), nil)
	}
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
	if r.done {
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
