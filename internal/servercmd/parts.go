package servercmd

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/hoster-dev/hoster/pkg/accesslog"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/fleet"
	"github.com/hoster-dev/hoster/pkg/health"
	"github.com/hoster-dev/hoster/pkg/hostserver"
	"github.com/hoster-dev/hoster/pkg/runtime"
	"github.com/hoster-dev/hoster/pkg/store"
	"github.com/hoster-dev/hoster/pkg/tools"
)

// parts are serve's server: the parts every hoster server has, wired by
// pkg/hostserver (the store, the Sync API, the pages, the runtime), with
// serve's own around them: the tools routes, the worker pool of --isolation
// process, the health sampler and the access log.
type parts struct {
	host     *hostserver.Host
	handler  http.Handler // the --listen handler, access-logged if on
	closers  []func() error
	stoppers []func(context.Context)
}

// buildParts builds serve's parts; node, if not nil, is the fleet the
// server joined.
func buildParts(ctx context.Context, o serveOptions, token string, variant api.Variant, node *fleet.Node, log *slog.Logger) (*parts, error) {
	ho := hostOptions(o, token, variant, log)
	nodeName := ""
	if node != nil {
		nodeName = node.Name()
		ho.Runtime.Node = nodeName
	}
	if o.Isolation == "process" {
		// The parent loads each game (its pages, its browser library, the
		// ask gate); its instances run in the game's worker.
		ho.Isolate = func(parent hostserver.Parent) (hostserver.Isolation, error) {
			pool, err := workerPool(o, nodeName, parent, log)
			if err != nil {
				return nil, err
			}
			return pool, nil
		}
	}
	var fleetSync *fleet.Sync // set below, before any request
	var rooms *fleet.Rooms
	if node != nil {
		ho.Publish = func(ch []store.Change) error { return fleetSync.Publish(ch) }
		ho.Hold = func(domain, game string) func() { return fleetSync.Hold(domain, game) }
		ho.Tree = func() (map[string]string, error) { return fleetSync.Tree() }
		var err error
		if rooms, err = o.Cluster.rooms(ctx, node); err != nil {
			return nil, err
		}
		ho.Runtime.Rooms = rooms
	}
	host, err := hostserver.New(ho)
	if err != nil {
		if rooms != nil {
			rooms.Close()
		}
		return nil, err
	}
	p := &parts{host: host, handler: host.Handler()}
	p.closers = append(p.closers, func() error { host.Close(); return nil })
	if node != nil {
		fleetSync, err = fleet.StartSync(ctx, node, fleet.SyncOptions{Store: host.Store(), Reload: host.Reload,
			ReloadDebounce: o.ReloadDebounce, Logger: log})
		if err != nil {
			p.close()
			return nil, err
		}
		p.closers = append(p.closers, func() error { fleetSync.Close(); return nil })
	}
	if rooms != nil {
		// Relayed sockets are the node's own, served without the access
		// log: the relaying node logs them. A stop releases the rooms
		// before their players are told, so that those joining again make
		// them on another node.
		go rooms.Serve(host.Handler())
		p.stoppers = append(p.stoppers, func(context.Context) { rooms.Close() })
	}
	p.stoppers = append(p.stoppers, host.Shutdown)
	log.Info("game telemetry", "process", host.Runtime().Process())
	if err := p.logAndSample(ctx, o, log); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// hostOptions are the host's settings from serve's.
func hostOptions(o serveOptions, token string, variant api.Variant, log *slog.Logger) hostserver.Options {
	return hostserver.Options{
		HostingRoot: o.HostingRoot, Token: token, Variant: variant,
		MaxUpload: o.MaxUpload, ReloadDebounce: o.ReloadDebounce, Logger: log,
		Routes: tools.Routes(tools.Options{
			LogsRoot: o.LogsRoot, Variant: variant, StatsInterval: o.StatsInterval,
			Snapshot: health.Snapshot, Logger: log,
		}),
		Runtime: runtime.Options{
			LogsRoot: o.LogsRoot, GamelogInterval: o.GamelogInterval,
			MaxInstances: o.MaxInstances, Instances: o.DefaultInstances,
			RoomsPerMinute: o.RoomsPerMinute, SocketsPerAddress: o.SocketsPerAddress,
			LoadLater: true,
		},
	}
}

// logAndSample starts the machine-health sampler (every --stats-interval,
// with retention at start and daily) and, with --access-log, wraps the
// handler in the access log.
func (p *parts) logAndSample(ctx context.Context, o serveOptions, log *slog.Logger) error {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&health.Sampler{LogsRoot: o.LogsRoot, Interval: o.StatsInterval, Logger: log}).Run(sctx)
	}()
	p.stoppers = append(p.stoppers, func(context.Context) { cancel(); <-done })
	if !o.AccessLog {
		return nil
	}
	al, err := accesslog.New(o.LogsRoot, log)
	if err != nil {
		return err
	}
	p.handler = al.Middleware(p.handler)
	p.closers = append(p.closers, al.Close)
	return nil
}

// loadGames loads the games, once the server listens: a game whose load is
// slow answers 404 until it is loaded, and a stop never waits for the
// loading (each game's load runs under the hook budget).
func (p *parts) loadGames(log *slog.Logger) {
	p.host.LoadGames()
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
