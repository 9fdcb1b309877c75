package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/runtime"
)

// Options configure a Pool, the parent's side.
type Options struct {
	// Command is the worker's program and arguments (hoster-server worker
	// and the flags the parent shares); the pool adds --game and --memory.
	Command []string
	// Budget is the memory budget of domain/game in bytes.
	Budget func(domain, game string) int64
	// Source is the version of domain/game the parent runs
	// (runtime.Runtime.Source): a worker is given it at its start and at
	// each reload that changes it, and never reads the game's folder, so
	// that a game whose newest files did not load runs its last good
	// version in every worker, as in one process. ok is false for a game
	// not loaded (removed).
	Source func(domain, game string) (src runtime.Source, ok bool, stale error)
	// TakeRoom answers a worker asking whether an address may start a new
	// instance (runtime.Runtime.TakeRoom of the parent): one count of new
	// rooms per address for the whole server. Nil allows every one.
	TakeRoom func(addr string) bool
	// ReturnRoom gives back a room TakeRoom took (runtime.Runtime.ReturnRoom
	// of the parent). With it, the parent takes a room for each socket as
	// it hands it over, and the worker gives back the ones its joins did
	// not spend; nil: a worker asks at each new instance.
	ReturnRoom func(addr string)
	// Watch is how often the parent reads each worker's resident memory:
	// 100 ms.
	Watch time.Duration
	// Crashes within CrashWindow hold a game stopped until its next
	// reload: 5 in a minute. Between crashes a worker restarts after a
	// backoff doubling from Backoff (500 ms), the first one at once.
	Crashes     int
	CrashWindow time.Duration
	Backoff     time.Duration
	// LogsRoot is {logs_root}: a worker's end is written to its game's
	// stats file. Empty writes none.
	LogsRoot string
	// Logger receives the pool's lines and the workers' own.
	Logger *slog.Logger
	// Cgroup names the pool's group of its workers' cgroups (CgroupName
	// of the hosting root); empty makes none: the workers are then bounded
	// by a data-size limit, the watchdog and their nice level only.
	Cgroup string
	// CPUs is the most cores a worker may use where a cgroup bounds its
	// CPU; 0 is DefaultCPUs.
	CPUs float64
}

// Pool runs each game's worker, started at its first socket and ended when
// it stays idle, and hands it the game's sockets.
type Pool struct {
	o      Options
	log    *slog.Logger
	cg     *cgroups // what bounds the workers' memory and CPU
	rooms  rooms    // the rooms taken for the sockets handed over
	mu     sync.Mutex
	games  map[string]*slot
	seq    int
	closed bool
}

// slot is one game's place in the pool.
type slot struct {
	key       string // "<domain>/<game>"
	w         *proc  // the running worker, nil when none
	crashes   []time.Time
	notBefore time.Time // no start before this (backoff)
	held      bool      // crashed too often: stopped until the next reload
}

// New makes a pool; it starts no worker.
func New(o Options) *Pool {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Watch <= 0 {
		o.Watch = 100 * time.Millisecond
	}
	if o.Crashes <= 0 {
		o.Crashes = 5
	}
	if o.CrashWindow <= 0 {
		o.CrashWindow = time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.CPUs <= 0 {
		o.CPUs = DefaultCPUs()
	}
	p := &Pool{o: o, log: o.Logger, games: map[string]*slot{}}
	p.rooms.o = &p.o
	p.cg = detectCgroups(o.Cgroup, o.CPUs)
	p.log.Info("game workers' bounds", p.cg.describe()...)
	return p
}

// HandOff is the taker of a game's sockets (runtime.Options.HandOff): the
// game's worker, started if there is none, which each socket the parent
// upgrades is handed to. A game held stopped, or waiting out its restart
// backoff, has none: its error is answered 503.
func (p *Pool) HandOff(domain, game string) (func(runtime.Handed, func()), error) {
	wk, err := p.worker(domain + "/" + game)
	if err != nil {
		return nil, err
	}
	return wk.hand, nil
}

// worker is the game's running worker, started if need be.
func (p *Pool) worker(key string) (*proc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("the server is shutting down")
	}
	s := p.games[key]
	if s == nil {
		s = &slot{key: key}
		p.games[key] = s
	}
	switch {
	case s.w != nil && !s.w.retired:
		return s.w, nil
	case s.held:
		return nil, fmt.Errorf("the game %s is stopped after crashing %d times: it starts again at its next sync", key, p.o.Crashes)
	case time.Now().Before(s.notBefore):
		return nil, fmt.Errorf("the game %s is restarting after a crash", key)
	}
	wk, err := p.start(s)
	if err != nil {
		p.log.Error("starting a game worker", "game", key, "err", err)
		return nil, fmt.Errorf("the game %s could not start", key)
	}
	s.w = wk
	return wk, nil
}

// Reload follows a sync's reload in the game's worker: a new version is
// given to it (a push that did not load changes none: the running version
// keeps serving), a removed game is removed. A game held stopped, or whose
// worker ended with a crash, starts again.
func (p *Pool) Reload(domain, game string) {
	key := domain + "/" + game
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.games[key]
	if s == nil || p.closed {
		return
	}
	src, loaded, _ := p.o.Source(domain, game)
	if s.w != nil {
		switch {
		case !loaded:
			s.w.ch.send(message{T: msgRemove}, -1)
		case src.ID != s.w.version:
			if err := s.w.sendVersion(src); err != nil {
				s.w.log.Warn("giving the game's new version to its worker", "err", err)
			}
		}
		return
	}
	restart := loaded && (s.held || len(s.crashes) > 0)
	s.held, s.crashes, s.notBefore = false, nil, time.Time{}
	if !restart {
		return
	}
	wk, err := p.start(s)
	if err != nil {
		p.log.Error("starting a game worker after its reload", "game", key, "err", err)
		return
	}
	s.w = wk
	p.log.Info("game worker started again by its reload", "game", key)
}

// Shutdown asks every worker to end (their players get a going-away close
// and their last stats lines are written) and waits for them, killing
// those still running when ctx ends; then it removes its cgroups.
func (p *Pool) Shutdown(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	var all []*proc
	for _, s := range p.games {
		if s.w != nil {
			all = append(all, s.w)
		}
	}
	p.mu.Unlock()
	for _, wk := range all {
		wk.stopping.Store(true)
		wk.ch.send(message{T: msgShutdown}, -1)
	}
	for _, wk := range all {
		select {
		case <-wk.done:
		case <-ctx.Done():
			wk.cmd.Process.Kill()
			<-wk.done
		}
	}
	if err := p.cg.close(); err != nil {
		p.log.Warn("removing the workers' cgroups", "err", err)
	}
}

// Running lists the games with a worker now.
func (p *Pool) Running() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k, s := range p.games {
		if s.w != nil {
			out = append(out, k)
		}
	}
	return out
}

// ended is told by a worker's waiter that it exited, and why: "" for a
// requested end (idle, shut down), else the reason its players were given.
func (p *Pool) ended(s *slot, wk *proc, crash string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.w == wk {
		s.w = nil
	}
	if crash == "" {
		return
	}
	now := time.Now()
	recent := s.crashes[:0]
	for _, t := range s.crashes {
		if now.Sub(t) < p.o.CrashWindow {
			recent = append(recent, t)
		}
	}
	s.crashes = append(recent, now)
	if len(s.crashes) >= p.o.Crashes {
		s.held = true
		wk.telemetry("held", "crashed "+fmt.Sprint(len(s.crashes))+" times: stopped until its next sync") // before the log line, as run's end
		p.log.Error("game stopped after crashing repeatedly: it starts again at its next sync", "game", s.key, "crashes", len(s.crashes), "within", p.o.CrashWindow)
		return
	}
	if n := len(s.crashes); n > 1 {
		s.notBefore = now.Add(p.o.Backoff << (n - 2))
	}
}
