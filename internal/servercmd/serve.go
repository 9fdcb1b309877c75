package servercmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/fleet"
	"github.com/hoster-dev/hoster/pkg/runtime"
	"github.com/hoster-dev/hoster/pkg/server"
	"github.com/spf13/cobra"
)

// serveOptions are the flags of hoster-server serve.
type serveOptions struct {
	Listen          string
	AskListen       string
	HostingRoot     string
	LogsRoot        string
	Variant         int
	TLSCert         string
	TLSKey          string
	AccessLog       bool
	StatsInterval   time.Duration
	GamelogInterval time.Duration
	ReloadDebounce  time.Duration
	MaxUpload       int64
	// The bounds no game can lift (runtime.Options has their meaning).
	MaxInstances      int
	DefaultInstances  int
	RoomsPerMinute    int
	SocketsPerAddress int
	// Isolation is where games run: "none", in this process; "process",
	// each game in a worker process of its own, with its memory budget
	// (Memory MiB unless its hoster-game.json says, never above MaxMemory)
	// and CPUs cores where a cgroup bounds it (0: worker.DefaultCPUs), and
	// ended after WorkerIdle without an instance.
	Isolation  string
	Memory     int
	MaxMemory  int
	CPUs       float64
	WorkerIdle time.Duration
	// Cluster joins a fleet of servers (off: no NATS at all).
	Cluster clusterOptions

	// workerExe is the program run as the game workers; "" is this one.
	// Not a flag: tests give a built hoster-server.
	workerExe string
	// memoryWatch is how often a worker's resident memory is read; 0 is
	// 100 ms. Not a flag.
	memoryWatch time.Duration
	// shutdownGrace is how long a stop waits for requests in flight before
	// cutting them off; 0 means 10 s. Not a flag: tests shorten it.
	shutdownGrace time.Duration
	// idleTimeout closes kept-alive connections idle this long; 0 means
	// 2 min. Not a flag: tests shorten it.
	idleTimeout time.Duration
}

// readTimeout bounds reading a request, body included, on --listen; an
// authenticated upload replaces it with a deadline that moves with its
// progress (server.Options.BodyStall), and game sockets clear it.
const readTimeout = 60 * time.Second

func newServeCmd(_, errOut io.Writer) *cobra.Command {
	o := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the games and the Sync and tools APIs",
		Long: `serve runs the games under {hosting_root}/hoster-games and the token-protected
API on --listen (behind Caddy), and the ask gate for Caddy's on-demand TLS on
--ask-listen. Every flag can also be set as HOSTER_SERVER_<FLAG>, for example
HOSTER_SERVER_LISTEN; a flag on the command line wins.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), nil); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewTextHandler(errOut, nil))
			return runServe(ctx, o, logger, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8787", "HTTP address of the API and the games (the proxy terminates TLS)")
	f.StringVar(&o.AskListen, "ask-listen", "127.0.0.1:8788", "address of the ask gate for Caddy's on-demand TLS (never proxied)")
	f.StringVar(&o.HostingRoot, "hosting-root", "/srv/hoster", "the hosting root: hoster-games/ and hoster-token")
	f.StringVar(&o.LogsRoot, "logs-root", "/var/log/hoster", "the logs root")
	f.IntVar(&o.Variant, "variant", 1, "which published form of the contract to serve: 1 or 2")
	f.StringVar(&o.TLSCert, "tls-cert", "", "serve TLS directly with this certificate (PEM), no proxy")
	f.StringVar(&o.TLSKey, "tls-key", "", "the key of --tls-cert (PEM)")
	f.BoolVar(&o.AccessLog, "access-log", false, "write {logs_root}/web-logs/access.log in Caddy's JSON format (when not behind Caddy)")
	f.DurationVar(&o.StatsInterval, "stats-interval", 15*time.Second, "machine-health sampling interval")
	f.DurationVar(&o.GamelogInterval, "gamelog-interval", 60*time.Second, "interval of the game stats lines")
	f.DurationVar(&o.ReloadDebounce, "reload-debounce", 500*time.Millisecond, "quiet period after a sync before changed games reload")
	f.Int64Var(&o.MaxUpload, "max-upload", server.DefaultMaxUpload, "largest accepted upload in bytes")
	f.IntVar(&o.MaxInstances, "max-instances", runtime.DefaultMaxInstances, "the most instances of one game at once, whatever its maxInstances says")
	f.IntVar(&o.DefaultInstances, "default-instances", runtime.DefaultInstances, "the most instances of one game at once when it sets no maxInstances")
	f.IntVar(&o.RoomsPerMinute, "rooms-per-minute", runtime.DefaultRoomsPerMinute, "new instances (rooms) one client address may start in a minute, all games together")
	f.IntVar(&o.SocketsPerAddress, "sockets-per-address", runtime.DefaultSocketsPerAddress, "game sockets one client address may hold open at once")
	f.StringVar(&o.Isolation, "isolation", defaultIsolation, "where games run: process (each game in a worker process of its own, with a memory budget; Linux only) or none (in this process)")
	f.IntVar(&o.Memory, "memory", defaultMemory, "a game's memory budget in MiB when its hoster-game.json sets none (--isolation process)")
	f.IntVar(&o.MaxMemory, "max-memory", defaultMaxMemory, "the largest memory budget in MiB a game may ask for (--isolation process)")
	f.Float64Var(&o.CPUs, "cpus", 0, "the most cores one game's worker may use, where a cgroup can bound it (0: every core but one, at least one; --isolation process)")
	f.DurationVar(&o.WorkerIdle, "worker-idle", defaultWorkerIdle, "how long a game's worker stays with no instance before it ends (--isolation process)")
	o.Cluster.flags(f)
	return cmd
}

func (o serveOptions) validate() error {
	bad := func(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }
	if _, err := api.ParseVariant(fmt.Sprint(o.Variant)); err != nil {
		return bad("reading --variant: %d is not 1 or 2", o.Variant)
	}
	for _, a := range []struct{ flag, addr string }{{"--listen", o.Listen}, {"--ask-listen", o.AskListen}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return bad("reading %s: %w", a.flag, err)
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return bad("--tls-cert and --tls-key go together")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--stats-interval", o.StatsInterval}, {"--gamelog-interval", o.GamelogInterval}, {"--reload-debounce", o.ReloadDebounce}} {
		if d.v <= 0 {
			return bad("reading %s: must be positive, not %v", d.flag, d.v)
		}
	}
	if o.MaxUpload <= 0 {
		return bad("reading --max-upload: must be positive, not %d", o.MaxUpload)
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--max-instances", o.MaxInstances}, {"--default-instances", o.DefaultInstances}, {"--rooms-per-minute", o.RoomsPerMinute}, {"--sockets-per-address", o.SocketsPerAddress}} {
		if n.v <= 0 {
			return bad("reading %s: must be positive, not %d", n.flag, n.v)
		}
	}
	if o.DefaultInstances > o.MaxInstances {
		return bad("reading --default-instances: %d is above --max-instances (%d)", o.DefaultInstances, o.MaxInstances)
	}
	if err := o.Cluster.validate(); err != nil {
		return err
	}
	return o.validIsolation()
}

// readToken reads the token file once. An absent file turns the API off; an
// unreadable or empty one is an error, since the operator meant to have one.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("reading the token file %s: it is empty", path)
	}
	return tok, nil
}

// runServe builds every part from o and serves until ctx ends, then shuts
// down gracefully. ready, if not nil, receives the bound listen and ask
// addresses once both accept connections.
func runServe(ctx context.Context, o serveOptions, log *slog.Logger, ready func(listen, ask string)) error {
	variant, _ := api.ParseVariant(fmt.Sprint(o.Variant))
	tokenPath := filepath.Join(o.HostingRoot, api.TokenFile)
	token, err := readToken(tokenPath)
	if err != nil {
		return err
	}
	if token == "" {
		log.Warn("no token file: the API is off (every /api request answers 404); game sockets still serve", "file", tokenPath)
	}
	o.Isolation = isolationOn(goruntime.GOOS, o.Isolation, log)

	tuneGC(ctx, os.Getenv, log)
	var node *fleet.Node
	if o.Cluster.on() {
		if node, err = o.Cluster.join(ctx, o.HostingRoot, log); err != nil {
			return err
		}
		defer node.Close()
	}
	parts, err := buildParts(ctx, o, token, variant, node, log)
	if err != nil {
		return err
	}
	defer parts.close()

	main, ask := o.httpServers(parts, log)
	mainLn, askLn, err := o.listen()
	if err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() {
		if o.TLSCert != "" {
			errs <- main.ServeTLS(mainLn, o.TLSCert, o.TLSKey)
		} else {
			errs <- main.Serve(mainLn)
		}
	}()
	go func() { errs <- ask.Serve(askLn) }()
	go parts.loadGames(log) // once listening: see loadGames
	log.Info("serving", "listen", mainLn.Addr().String(), "ask", askLn.Addr().String(),
		"variant", int(variant), "api", token != "", "tls", o.TLSCert != "")
	if ready != nil {
		ready(mainLn.Addr().String(), askLn.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err := <-errs:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving stopped", "err", err)
			return fmt.Errorf("serving: %w", err)
		}
	}
	o.stop(parts, main, ask, log)
	return nil
}

// httpServers are the servers of --listen and --ask-listen.
func (o serveOptions) httpServers(parts *parts, log *slog.Logger) (main, ask *http.Server) {
	idle := o.idleTimeout
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	main = &http.Server{Handler: parts.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout, IdleTimeout: idle,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	ask = &http.Server{Handler: parts.host.AskHandler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, IdleTimeout: idle}
	return main, ask
}

// listen listens on --listen and --ask-listen.
func (o serveOptions) listen() (main, ask net.Listener, err error) {
	if main, err = net.Listen("tcp", o.Listen); err != nil {
		return nil, nil, fmt.Errorf("listening on --listen: %w", err)
	}
	if ask, err = net.Listen("tcp", o.AskListen); err != nil {
		main.Close()
		return nil, nil, fmt.Errorf("listening on --ask-listen: %w", err)
	}
	return main, ask, nil
}

// stop shuts the server down within the shutdown grace: the players get a
// going-away close first, then the listeners drain.
func (o serveOptions) stop(parts *parts, main, ask *http.Server, log *slog.Logger) {
	log.Info("shutting down")
	grace := o.shutdownGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	parts.shutdown(shutCtx)
	if ask.Shutdown(shutCtx) != nil {
		ask.Close()
	}
	if main.Shutdown(shutCtx) != nil {
		// Requests still running after the grace (a slow upload) are cut
		// off: closing their connections ends their reads, each upload
		// removes its temporary file, and the deferred close of the store
		// waits for that. A requested stop is still a clean exit.
		log.Warn("requests still running after the shutdown grace were cut off", "grace", grace)
		main.Close()
	}
}
