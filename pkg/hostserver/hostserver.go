// Package hostserver builds the parts of a hoster server and the routing
// between them: the games mirror on disk (pkg/store), the Sync API
// (pkg/server), the games' public files (pkg/pages) and the game runtime
// (pkg/runtime), each synced game reloaded in all of them. It is the one
// place they are wired: hoster-server serve and hoster dev both build their
// server here, and each adds only what is its own around it. serve gives the
// tools API (Options.Routes), its bounds (Options.Runtime), the worker pool
// of --isolation process (Options.Isolate), and runs the health sampler and
// the access log beside it; hoster dev gives a temporary hosting root and
// mounts its playground and its loopback rule in front of Handler.
//
// It links none of the operator's parts (the tools API, health sampling, log
// rolling, the worker pool), so hoster can link it for hoster dev.
package hostserver

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/game"
	"github.com/hoster-dev/hoster/pkg/pages"
	"github.com/hoster-dev/hoster/pkg/runtime"
	"github.com/hoster-dev/hoster/pkg/server"
	"github.com/hoster-dev/hoster/pkg/store"
)

// Options configure New.
type Options struct {
	// HostingRoot holds the games, under hoster-games/ (api.GamesDir).
	HostingRoot string
	// Token, Variant, MaxUpload and ReloadDebounce are the Sync API's
	// (server.Options has their meaning): "" turns the API off.
	Token          string
	Variant        api.Variant
	MaxUpload      int64
	ReloadDebounce time.Duration
	// Routes are further authenticated routes beside the Sync API (serve's
	// tools API), keyed as server.Options.Routes.
	Routes map[string]http.Handler
	// Runtime are the runtime's settings (its bounds, telemetry, LoadLater);
	// New sets its GamesRoot, Logger and HandOff.
	Runtime runtime.Options
	// Isolate, if set, makes where the games' instances run instead of this
	// process (serve --isolation process: pkg/worker's pool), given this
	// process's runtime.
	Isolate func(parent Parent) (Isolation, error)
	// OnReload, if set, is called after a synced game was reloaded;
	// loaded is whether it now runs (false: it was deleted, or is broken).
	OnReload func(domain, name string, loaded bool)
	// Publish, Hold and Tree, if set, are the Sync API's (server.Options
	// has their meaning): serve's fleet publishes every sync's changes,
	// keeps its other writes off a game a sync changes, and answers the
	// fleet's tree.
	Publish func([]store.Change) error
	Hold    func(domain, game string) (release func())
	Tree    func() (map[string]string, error)
	// Logger receives every part's lines; nil discards them.
	Logger *slog.Logger
}

// Isolation runs the games' instances outside this process: this process
// still loads each game (its pages, its browser library, the ask gate) and
// hands each game socket to it.
type Isolation interface {
	// HandOff is the taker of a loaded game's sockets, which this
	// process upgrades (runtime.Options.HandOff).
	HandOff(domain, name string) (give func(runtime.Handed, func()), err error)
	// Reload follows a synced game.
	Reload(domain, name string)
	// Shutdown ends every instance.
	Shutdown(ctx context.Context)
}

// Parent is what an Isolation reads of this process's runtime: a loaded
// game's configuration (the budgets it asks for) and the files of its
// running version (what its worker runs), and the server's count of new
// rooms per address (runtime.Runtime has each method's meaning).
type Parent interface {
	Config(domain, name string) (game.Config, bool)
	Source(domain, name string) (src runtime.Source, ok bool, stale error)
	TakeRoom(addr string) bool
	ReturnRoom(addr string)
}

// parent is the Host's runtime as a Parent: Isolate is called before the
// runtime exists (the runtime takes the isolation's HandOff), and the
// isolation asks nothing of it before a game loads.
type parent struct{ h *Host }

func (p parent) Config(domain, name string) (game.Config, bool) { return p.h.rt.Config(domain, name) }
func (p parent) Source(domain, name string) (runtime.Source, bool, error) {
	return p.h.rt.Source(domain, name)
}
func (p parent) TakeRoom(addr string) bool { return p.h.rt.TakeRoom(addr) }
func (p parent) ReturnRoom(addr string)    { p.h.rt.ReturnRoom(addr) }

// Host is a server's parts, wired.
type Host struct {
	store    *store.Store
	rt       *runtime.Runtime
	files    *pages.Files
	iso      Isolation // nil: the instances run in this process
	srv      *server.Server
	onReload func(domain, name string, loaded bool)
	shutdown sync.Once
}

// New opens the games mirror under o.HostingRoot and builds the runtime, the
// pages and the Sync API on it. Close releases them.
func New(o Options) (*Host, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	gamesRoot := filepath.Join(o.HostingRoot, api.GamesDir)
	h := &Host{onReload: o.OnReload}
	var err error
	if h.store, err = store.Open(gamesRoot); err != nil {
		return nil, err
	}
	ro := o.Runtime
	ro.GamesRoot, ro.Logger = gamesRoot, o.Logger
	if o.Isolate != nil {
		// h.rt is set below, before any game is loaded or asked for.
		if h.iso, err = o.Isolate(parent{h}); err != nil {
			h.store.Close()
			return nil, err
		}
		ro.HandOff = h.iso.HandOff
	}
	if h.rt, err = runtime.New(ro); err != nil {
		h.store.Close()
		return nil, err
	}
	h.files = pages.New(pages.Options{Store: h.store, Loaded: h.rt.Loaded})
	h.srv, err = server.New(server.Options{
		GamesRoot: gamesRoot, Store: h.store, Token: o.Token, Variant: o.Variant,
		MaxUpload: o.MaxUpload, ReloadDebounce: o.ReloadDebounce,
		OnReload: h.Reload, Routes: o.Routes, Games: h.files.Route(h.rt), Logger: o.Logger,
		Publish: o.Publish, Hold: o.Hold, Tree: o.Tree,
	})
	if err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Reload follows a changed game in every part, then tells OnReload: the
// Sync API calls it once a sync's writes went quiet, a fleet once it wrote
// what another node published.
func (h *Host) Reload(domain, name string) {
	h.rt.Reload(domain, name)
	h.files.Forget(domain, name)
	if h.iso != nil {
		h.iso.Reload(domain, name)
	}
	if h.onReload != nil {
		h.onReload(domain, name, h.rt.Loaded(domain, name))
	}
}

// Handler is the handler of the server's address: the Sync API and the
// further routes under /api, the games' pages and sockets everywhere else.
func (h *Host) Handler() http.Handler { return h.srv.Handler() }

// AskHandler is the ask gate for Caddy's on-demand TLS.
func (h *Host) AskHandler() http.Handler { return h.rt.AskHandler() }

// Store is the games mirror on disk.
func (h *Host) Store() *store.Store { return h.store }

// Runtime is the game runtime.
func (h *Host) Runtime() *runtime.Runtime { return h.rt }

// LoadGames loads the games (Options.Runtime.LoadLater left them unloaded).
func (h *Host) LoadGames() { h.rt.LoadGames() }

// Shutdown ends every instance, players first getting a going-away close,
// waiting for them until ctx ends. Only the first call does anything.
func (h *Host) Shutdown(ctx context.Context) {
	h.shutdown.Do(func() {
		h.rt.Shutdown(ctx)
		if h.iso != nil {
			h.iso.Shutdown(ctx)
		}
	})
}

// Close shuts down what Shutdown has not yet, flushes the pending reloads
// and releases the games mirror. The listeners come first: a request still
// running holds the store, whose close waits for it.
func (h *Host) Close() {
	h.Shutdown(context.Background())
	if h.srv != nil {
		h.srv.Close()
	}
	h.files.Close()
	h.store.Close()
}
