// Package runtime runs the games: it loads each game's generated
// hoster.server.js, runs instances of it that tick at the game's rate, takes
// players on the game's WebSocket, and sends each viewer only what changed
// for it.
//
// # Shape
//
// Each instance owns a goja runtime and one goroutine; the game's compiled
// program is shared. Game state never leaves JavaScript: once per tick the
// instance makes one call with every queued join, leave and command (built
// as JavaScript values, not JSON), and once per send round one call that
// computes every ready viewer's appear/change/gone delta in JavaScript and
// returns finished messages. Each call runs under a budget of its own CPU
// time and a bounded call stack; a hook that overruns closes its instance
// (close code 1011) and nothing else. What Go reads back from a call is
// data, not trust: read under the same budget, inside a recover, checked for
// shape (jsvalue.go); and the prelude uses built-ins taken before the game's
// code ran (intrinsics.js). A hook that throws is caught in
// JavaScript: a command's player gets an error frame, everything else is
// logged with the author's file:line (the module's source map) and the tick
// goes on; what hooks ask of Go (messages, kicks, closing, locking) comes
// back from each tick as one list (hooks.go).
//
// A Game keeps its identity from its first load to its removal; each load is
// an immutable version, and each instance moves to the current one at its
// next tick.
//
// Ticks follow a fixed-step schedule from the instance's start, kept on one
// clock (the wall clock; a fake in tests), so compute time never accumulates
// as drift; an instance more than a few steps late, from a slow step or a
// late wake, restarts its schedule from now with one tick instead of
// bursting to catch up, and dt is the time actually elapsed.
//
// Each connection has a reader goroutine (validating commands against
// args.json and answering a bad one with an error frame at once) and a
// writer goroutine that is seldom woken: frames are written by the goroutine
// that queued them, on the non-blocking socket, in one write carrying all
// that is due (after a send round, a viewer's update and the messages that
// follow it), and only what the socket does not take at once is left to the
// writer, which waits for it under a write deadline and sends the pings.
// Every write, gorilla/websocket's own close frames included, goes through
// one lock per socket (wire.go). A viewer with two updates not yet taken by
// its socket (maxUpdatesInFlight) skips the round; its next update is
// computed against what it last received, so it gets one merged delta. A
// viewer stuck past the write deadline, or not answering pings, is dropped;
// one queueing more than the byte cap (maxQueued) is closed with 1008.
//
// What a game and an address may make is bounded (bounds.go): a game's
// instances, the new instances and the open sockets of one address. A
// socket past a bound gets 1013 and a reason before any instance exists.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// Options configure a Runtime. Zero values take the defaults given.
type Options struct {
	// GamesRoot is {hosting_root}/hoster-games.
	GamesRoot string
	// Logger receives what happens to games and instances.
	Logger *slog.Logger
	// ResumeGrace, when positive, replaces every game's resumeGrace (how
	// long the seat of a player whose connection was lost is held); tests
	// use it. Zero: each game's hoster-game.json decides.
	ResumeGrace time.Duration
	// EmptyGrace, when positive, replaces every game's emptyGrace (how
	// long an instance with no player lives on); tests use it. Zero: each
	// game's hoster-game.json decides.
	EmptyGrace time.Duration
	// HookBudget bounds one call into a game's JavaScript: 1 s of the
	// call's own CPU time (its thread's clock), not of the wall: an
	// overloaded machine, where a call waits for a core, slows games down
	// but never stops a healthy one. It is set to catch runaways, not to
	// police slow ticks.
	HookBudget time.Duration
	// Stuck, if set, is called when a call into a game's JavaScript has run
	// StuckGrace past its interrupt without stopping (goja's builtins, a
	// regexp's backtracking, JSON or join, never look at the interrupt):
	// only ending the process stops it. A worker process sets it; nil
	// leaves the call to run.
	Stuck func(reason string)
	// StuckGrace is how long an interrupted call may go on before Stuck:
	// 1 s.
	StuckGrace time.Duration
	// Game, if set ("<domain>/<game>"), is the one game this runtime runs:
	// a worker process's, which New loads nothing for; its parent gives it
	// the version to run (Install) or removes it (Remove).
	Game string
	// HandOff, if set, takes each game socket instead of this runtime: a
	// parent hands it to the game's worker (which serves it with Adopt).
	// It is asked for the game's taker once a request passed the checks
	// before an upgrade (the game loaded, its origins, the room's name)
	// and the bound of sockets per address, which this runtime holds for
	// every game; an error is answered 503 with its text. The socket is
	// then upgraded here and given to the taker. It counts for its address
	// until the taker is done with it, which it says by calling end, once:
	// before it returns, or later (it need not wait for the socket's end,
	// and a parent's goroutine for each of a worker's sockets would be
	// memory for nothing).
	HandOff func(domain, game string) (give func(h Handed, end func()), err error)
	// Rooms, if set, says where each private room (?room=) lives in a
	// fleet of servers (pkg/fleet): it is asked before a private room's
	// socket is served here or handed off, once it passed the same checks
	// and holds its address's place.
	Rooms Rooms
	// WriteTimeout bounds one socket write: 10 s.
	WriteTimeout time.Duration
	// MaxFrame is the largest frame a player may send: 16 KiB.
	MaxFrame int64
	// MaxCommandsPerSecond per player: 100.
	MaxCommandsPerSecond int
	// MaxInstances is the most instances of one game that run at once,
	// whatever its hoster-game.json says: DefaultMaxInstances.
	MaxInstances int
	// Instances is the most instances of one game that run at once when
	// its hoster-game.json sets no maxInstances: DefaultInstances, never
	// above MaxInstances.
	Instances int
	// RoomsPerMinute is how many new instances the sockets of one address
	// may start in a minute (a private room, or a public instance when the
	// others are full), on the clock of Now: DefaultRoomsPerMinute;
	// negative: no bound. An address is the client's (behind a loopback
	// proxy, its X-Forwarded-For: see pkg/clientip), an IPv6 one's /64.
	RoomsPerMinute int
	// TakeRoom, if set, decides whether an address (its key, as the
	// bounds count it) may start one more instance, instead of this
	// runtime's own count of RoomsPerMinute: a game's worker asks its
	// parent, whose count is the server's, whichever games the rooms are
	// of. RoomsPerMinute negative still turns the bound off.
	TakeRoom func(addr string) bool
	// SocketsPerAddress is how many game sockets one address may hold open
	// at once: DefaultSocketsPerAddress; negative: no bound.
	SocketsPerAddress int
	// Observe, if set, is told how long each tick ("tick") and each send
	// round ("send") took, and, with a zero duration, of each viewer passed
	// over in a send round because its earlier updates were still waiting
	// for its socket ("skip"), and of how late an instance was when it gave up catching up
	// and restarted its schedule ("stall"), of each instance's create
	// ("start"), and of a scheduler worker set aside because one step held
	// it for detachAfter ("detach", how long it had run); from the
	// scheduler's goroutines: keep it cheap.
	Observe func(kind string, d time.Duration)
	// LogsRoot is {logs_root}: game telemetry goes to hoster-logs/ below it.
	// Empty writes none.
	LogsRoot string
	// Node, in a fleet, is this node's name, written in each telemetry
	// line.
	Node string
	// GamelogInterval is the period of the stats lines: 60 s.
	GamelogInterval time.Duration
	// Now is the clock of the telemetry; nil is the schedule's clock (the
	// wall clock unless a test gives another).
	Now func() time.Time

	// LoadLater leaves the games unloaded by New: LoadGames loads them.
	// hoster-server serve listens first, then loads them, so that a game
	// whose load is slow or stuck never keeps the server from answering.
	LoadLater bool

	// clock keeps the instances' schedules and the runtime's timers (resume
	// graces, empty instances' ends); nil is the wall clock. Tests, and
	// hoster test's TestGame, give another to step them without sleeping.
	clock clock
	// manual: the instances are stepped by a TestGame, not by the
	// scheduler's workers.
	manual bool
	// workers is how many goroutines step the instances; 0 is GOMAXPROCS.
	workers int
}

// Rooms places private rooms across a fleet of servers.
type Rooms interface {
	// Enter is asked for a socket of the private room key
	// ("<domain>/<game>/<code>"). When the room lives on another server,
	// Enter carries the socket there (or answers it) and returns served;
	// else the room is this server's, kept while its sockets last and for
	// linger after the last (the seats' resume grace and the empty
	// instance's grace), and leave is called when the socket ends.
	Enter(w http.ResponseWriter, r *http.Request, key string, linger time.Duration) (leave func(), served bool)
}

// Runtime is the game side of hoster-server.
type Runtime struct {
	o   Options
	log *slog.Logger

	// Lock order: rt.mu, then a Game's mu, then an Instance's mu, then a
	// conn's mu. A lock is never taken while holding one later in that
	// order; hook calls into JavaScript run with none of them held. The
	// locks of refusals and bounds are leaves: taken under any of those,
	// they are held while nothing else is locked.
	mu     sync.RWMutex
	games  map[string]map[string]*Game // domain -> game name -> game
	seats  map[string]*seat            // resume token -> seat
	closed bool

	loadMu     sync.Mutex // one Reload at a time: the last to run reads the newest files
	sched      *scheduler // steps the instances
	refusals   refusals   // sockets refused, for a rate-limited log
	bounds     addrBounds // what each address holds, for its bounds
	process    string     // this process's id, minted at start
	now        func() time.Time
	logs       chan logLine
	logsDone   chan struct{}
	logsMu     sync.RWMutex
	logsClosed bool
}

// Process is this process's id (6 random bytes, hex), the <process> of the
// game-log tree.
func (rt *Runtime) Process() string { return rt.process }

// New discovers the games under GamesRoot; a broken game is skipped with a
// logged reason and never affects the others.
func New(o Options) (*Runtime, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.HookBudget, time.Second)
	def(&o.WriteTimeout, 10*time.Second)
	def(&o.StuckGrace, time.Second)
	if o.MaxFrame <= 0 {
		o.MaxFrame = 16 << 10
	}
	if o.MaxCommandsPerSecond <= 0 {
		o.MaxCommandsPerSecond = 100
	}
	for _, b := range []struct {
		v   *int
		def int
	}{{&o.MaxInstances, DefaultMaxInstances}, {&o.Instances, DefaultInstances},
		{&o.RoomsPerMinute, DefaultRoomsPerMinute}, {&o.SocketsPerAddress, DefaultSocketsPerAddress}} {
		if *b.v == 0 {
			*b.v = b.def
		}
	}
	o.MaxInstances = max(o.MaxInstances, 1)
	o.Instances = min(max(o.Instances, 1), o.MaxInstances)
	def(&o.GamelogInterval, 60*time.Second)
	if o.clock == nil {
		o.clock = realClock{}
	}
	if o.Now == nil {
		o.Now = o.clock.Now
	}
	rt := &Runtime{o: o, log: o.Logger, games: map[string]map[string]*Game{}, seats: map[string]*seat{},
		process: newID(), now: o.Now, logs: make(chan logLine, 4096), logsDone: make(chan struct{})}
	if _, err := os.ReadDir(o.GamesRoot); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("reading the games root: %w", err)
	}
	rt.sched = newScheduler(o.clock, o.Observe, o.workers, o.manual)
	go rt.writeLogs()
	if !o.LoadLater && o.Game == "" {
		rt.LoadGames()
	}
	return rt, nil
}

// LoadGames loads every game under GamesRoot, one after the other; a game
// that cannot load (one whose code throws or runs past the hook budget) is
// logged and skipped and never affects the others. It stops early once the
// runtime shuts down.
func (rt *Runtime) LoadGames() {
	games, err := layout.Games(rt.o.GamesRoot) // as hoster gen and sync find them
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		rt.log.Warn("a folder of the games root could not be read: its games are not loaded", "err", err)
	}
	for _, g := range games {
		rt.mu.RLock()
		closed := rt.closed
		rt.mu.RUnlock()
		if closed {
			return
		}
		domain, name, _ := strings.Cut(g, "/")
		rt.Reload(domain, name)
	}
}

// Games lists the loaded games as "<domain>/<game>", sorted.
func (rt *Runtime) Games() []string {
	var out []string
	for _, g := range rt.loadedGames() {
		out = append(out, g.Key())
	}
	return out
}

// loadedGames is every loaded game, sorted by key.
func (rt *Runtime) loadedGames() []*Game {
	rt.mu.RLock()
	var games []*Game
	for _, gs := range rt.games {
		for _, g := range gs {
			games = append(games, g)
		}
	}
	rt.mu.RUnlock()
	sort.Slice(games, func(i, j int) bool { return games[i].Key() < games[j].Key() })
	return games
}

func (rt *Runtime) lookup(domain, name string) *Game {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return rt.games[domain][name]
}

// Reload loads domain/game again after a sync: a new or changed game serves
// its new code to new instances; a game that fails to load keeps its running
// version (the reason is logged); a game whose folder is gone closes its
// instances with a message to their players.
func (rt *Runtime) Reload(domain, name string) {
	rt.loadMu.Lock()
	defer rt.loadMu.Unlock()
	dir := filepath.Join(rt.o.GamesRoot, domain, name)
	if _, err := os.Stat(dir); os.IsNotExist(err) || !game.IsDomainName(domain) || !game.IsGameName(name) {
		rt.remove(domain, name)
		return
	}
	src, err := readSource(dir)
	var v *version
	if err == nil {
		v, err = loadVersion(src, rt.o.HookBudget, rt.stuckWatch())
	}
	if err != nil {
		// A folder without hoster-game.json is not a game (yet): no line.
		_, ok := os.Stat(filepath.Join(dir, api.GameConfigFile))
		rt.notLoaded(domain, name, err, ok == nil || !os.IsNotExist(ok))
		return
	}
	rt.use(domain, name, v)
}

// Install makes src domain/name's version, as Reload does with the files of
// the game's folder: a game's worker runs what its parent loaded. A source
// that does not load leaves the running version, and says why.
func (rt *Runtime) Install(domain, name string, src Source) {
	rt.loadMu.Lock()
	defer rt.loadMu.Unlock()
	v, err := loadVersion(src, rt.o.HookBudget, rt.stuckWatch())
	if err != nil {
		rt.notLoaded(domain, name, err, true)
		return
	}
	rt.use(domain, name, v)
}

// Remove closes domain/name's instances, their players told the game was
// removed, as Reload does for a game whose folder is gone.
func (rt *Runtime) Remove(domain, name string) {
	rt.loadMu.Lock()
	defer rt.loadMu.Unlock()
	rt.remove(domain, name)
}

// Source is the files of domain/name's running version; stale, when not
// nil, is why the game's newest files did not load (the version given is
// then its last good one). ok is false for a game that is not loaded.
func (rt *Runtime) Source(domain, name string) (src Source, ok bool, stale error) {
	g := rt.lookup(domain, name)
	if g == nil {
		return Source{}, false, nil
	}
	g.mu.Lock()
	stale = g.loadErr
	g.mu.Unlock()
	return g.current().src, true, stale
}

// remove forgets domain/name and closes its instances. rt.loadMu is held.
func (rt *Runtime) remove(domain, name string) {
	rt.mu.Lock()
	old := rt.games[domain][name]
	delete(rt.games[domain], name)
	if len(rt.games[domain]) == 0 {
		delete(rt.games, domain)
	}
	rt.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		old.removed = true
		old.mu.Unlock()
		rt.log.Info("game removed; closing its instances", "game", domain+"/"+name)
		old.closeAll(1001, "the game was removed")
	}
}

// notLoaded records and (when logged) says why domain/name's newest files
// did not load: its running version, if any, keeps serving.
func (rt *Runtime) notLoaded(domain, name string, err error, logged bool) {
	args := []any{"game", domain + "/" + name, "reason", err}
	if g := rt.lookup(domain, name); g != nil {
		g.mu.Lock()
		g.loadErr = err
		g.mu.Unlock()
		args = append(args, "running", g.current().src.ID)
	}
	if logged {
		rt.log.Warn("game not loaded; the running version, if any, keeps serving", args...)
	}
}

// use makes v domain/name's current version. rt.loadMu is held.
func (rt *Runtime) use(domain, name string, v *version) {
	rt.mu.Lock()
	if rt.games[domain] == nil {
		rt.games[domain] = map[string]*Game{}
	}
	g := rt.games[domain][name]
	if g == nil {
		g = &Game{Domain: domain, Name: name, instances: map[string]*Instance{}}
		rt.games[domain][name] = g
	}
	// Live instances move to the new version at their next tick, keeping
	// their players connected; new instances start on it.
	g.cur.Store(v)
	rt.mu.Unlock()
	g.mu.Lock()
	g.loadErr = nil
	g.mu.Unlock()
	log := rt.log.With("game", domain+"/"+name)
	if v.cfg.MaxInstances > rt.o.MaxInstances {
		log.Warn("maxInstances is above the server's maximum: capped", "maxInstances", v.cfg.MaxInstances, "cap", rt.o.MaxInstances)
	}
	log.Info("game loaded", "version", v.src.ID, "tickRate", v.cfg.TickRate, "sendRate", v.cfg.SendRate, "capacity", v.cfg.Capacity,
		"maxInstances", rt.maxInstances(v.cfg))
}

// AskHandler answers Caddy's on-demand TLS question on --ask-listen:
// GET /ask?domain=NAME is 200 when NAME has a valid game, else 404.
func (rt *Runtime) AskHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		domain := strings.ToLower(r.URL.Query().Get("domain"))
		rt.mu.RLock()
		ok := r.URL.Path == "/ask" && len(rt.games[domain]) > 0
		rt.mu.RUnlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// ServeHTTP serves the game socket at /<game>, the domain chosen by Host (any
// port ignored). The game's files, its browser library included, are
// pkg/pages'.
func (rt *Runtime) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	rest := strings.TrimPrefix(r.URL.Path, "/")
	name, file, _ := strings.Cut(rest, "/")
	g := rt.lookup(host, name)
	switch {
	case g == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead):
		http.NotFound(w, r)
	case file == "" && !strings.HasSuffix(rest, "/"):
		rt.serveSocket(w, r, g)
	default:
		http.NotFound(w, r)
	}
}

// Shutdown sends every player a going-away close and stops every instance.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.mu.Lock()
	rt.closed = true
	var games []*Game
	for _, gs := range rt.games {
		for _, g := range gs {
			games = append(games, g)
		}
	}
	rt.mu.Unlock()
	// The instances are listed before they stop: a stopped one leaves its
	// game's list, and each is waited for, as it writes its last stats line.
	var instances []*Instance
	for _, g := range games {
		instances = append(instances, g.snapshot()...)
	}
	for _, g := range games {
		g.closeAll(1001, "the server is shutting down")
	}
	for _, in := range instances {
		select {
		case <-in.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rt.sched.stop()
	// Every line queued so far reaches its file before Shutdown returns.
	rt.logsMu.Lock()
	if !rt.logsClosed {
		rt.logsClosed = true
		close(rt.logs)
	}
	rt.logsMu.Unlock()
	select {
	case <-rt.logsDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (g *Game) snapshot() []*Instance {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*Instance, 0, len(g.instances))
	for _, in := range g.instances {
		out = append(out, in)
	}
	return out
}

func (g *Game) closeAll(code int, reason string) {
	for _, in := range g.snapshot() {
		in.stop(code, reason)
	}
}

// stuckWatch is what a call into a game's JavaScript that ignores its
// interrupt gets: in a game's worker, the worker ends (Options.Stuck).
func (rt *Runtime) stuckWatch() stuckWatch {
	return stuckWatch{grace: rt.o.StuckGrace, stuck: rt.o.Stuck}
}
