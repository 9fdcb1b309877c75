package servercmd

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/server"
)

// parts are the pieces of a running server besides the Sync API: the game
// runtime, the tools routes, the samplers and the access log. buildParts is
// the one place they are wired.
type parts struct {
	routes   map[string]http.Handler         // authenticated tools routes
	games    http.Handler                    // everything outside /api
	ask      http.Handler                    // the --ask-listen handler
	onReload func(domain, game string)       // after a sync's quiet period
	wrap     func(http.Handler) http.Handler // access logging, if on
	closers  []func() error
	stoppers []func(context.Context)
}

func buildParts(ctx context.Context, o serveOptions, variant api.Variant, log *slog.Logger) (*parts, error) {
	p := &parts{
		routes: map[string]http.Handler{},
		ask:    http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { server.NotFound(w) }),
	}
	return p, nil
}

func (p *parts) shutdown(ctx context.Context) {
	for _, stop := range p.stoppers {
		stop(ctx)
	}
}

func (p *parts) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}
