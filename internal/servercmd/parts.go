package servercmd

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/hoster-dev/hoster/pkg/accesslog"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/health"
	"github.com/hoster-dev/hoster/pkg/pages"
	"github.com/hoster-dev/hoster/pkg/runtime"
	"github.com/hoster-dev/hoster/pkg/store"
	"github.com/hoster-dev/hoster/pkg/tools"
	"github.com/hoster-dev/hoster/pkg/worker"
)

// parts are the pieces of a running server besides the Sync API: the game
// runtime, the tools routes, the health sampler and the access log.
// buildParts is the one place they are wired.
type parts struct {
	routes   map[string]http.Handler         // authenticated tools routes
	store    *store.Store                    // the games mirror, shared by the Sync API and the pages
	games    http.Handler                    // everything outside /api; nil answers 404
	ask      http.Handler                    // the --ask-listen handler
	onReload func(domain, game string)       // after a sync's quiet period
	load     func()                          // loads the games, once the server listens
	wrap     func(http.Handler) http.Handler // access logging, if on
	closers  []func() error
	stoppers []func(context.Context)
}

func buildParts(ctx context.Context, o serveOptions, variant api.Variant, log *slog.Logger) (*parts, error) {
	p := &parts{
		routes: tools.Routes(tools.Options{
			LogsRoot: o.LogsRoot, Variant: variant, StatsInterval: o.StatsInterval,
			Snapshot: health.Snapshot, Logger: log,
		}),
	}

	gamesRoot := filepath.Join(o.HostingRoot, api.GamesDir)
	st, err := store.Open(gamesRoot)
	if err != nil {
		return nil, err
	}
	var rt *runtime.Runtime
	var pool *worker.Pool
	var handOff func(http.ResponseWriter, *http.Request, string, string)
	if o.Isolation == "process" {
		// The parent loads each game (its pages, its browser library, the
		// ask gate); its instances run in the game's worker.
		if pool, err = workerPool(o, func() *runtime.Runtime { return rt }, log); err != nil {
			st.Close()
			return nil, err
		}
		handOff = pool.HandOff
	}
	rt, err = runtime.New(runtime.Options{
		GamesRoot: gamesRoot, Logger: log, HandOff: handOff,
		LogsRoot: o.LogsRoot, GamelogInterval: o.GamelogInterval,
		MaxInstances: o.MaxInstances, Instances: o.DefaultInstances,
		RoomsPerMinute: o.RoomsPerMinute, SocketsPerAddress: o.SocketsPerAddress,
		LoadLater: true,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	files := pages.New(pages.Options{Store: st, Loaded: rt.Loaded})
	p.store, p.closers = st, append(p.closers, st.Close, func() error { files.Close(); return nil })
	p.games, p.ask = files.Route(rt), rt.AskHandler()
	p.onReload = func(domain, game string) { rt.Reload(domain, game); files.Forget(domain, game) }
	p.load = rt.LoadGames
	p.stoppers = append(p.stoppers, func(ctx context.Context) { rt.Shutdown(ctx) })
	if pool != nil {
		p.onReload = func(domain, game string) {
			rt.Reload(domain, game)
			files.Forget(domain, game)
			pool.Reload(domain, game)
		}
		p.stoppers = append(p.stoppers, pool.Shutdown)
	}
	log.Info("game telemetry", "process", rt.Process())

	// Machine health every --stats-interval, with retention at start and daily.
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&health.Sampler{LogsRoot: o.LogsRoot, Interval: o.StatsInterval, Logger: log}).Run(sctx)
	}()
	p.stoppers = append(p.stoppers, func(context.Context) { cancel(); <-done })

	if o.AccessLog {
		al, err := accesslog.New(o.LogsRoot, log)
		if err != nil {
			cancel()
			<-done
			return nil, err
		}
		p.wrap = al.Middleware
		p.closers = append(p.closers, al.Close)
	}
	return p, nil
}

// loadGames loads the games, once the server listens: a game whose load is
// slow answers 404 until it is loaded, and a stop never waits for the
// loading (each game's load runs under the hook budget).
func (p *parts) loadGames(log *slog.Logger) {
	p.load()
	log.Info("games loaded")
}

func (p *parts) shutdown(ctx context.Context) {
	for _, stop := range p.stoppers {
		stop(ctx)
	}
	p.stoppers = nil
}

func (p *parts) close() {
	p.shutdown(context.Background())
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}
