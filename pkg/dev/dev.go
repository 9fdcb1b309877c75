// Package dev runs a sites tree on the author's desk, as `hoster dev` does:
// a private hoster-server on 127.0.0.1 with a temporary hosting root and a
// token that never leaves the process, the tree generated and synced into it
// through the same client, Sync API and reload as a real sync, then watched
// and synced again on every save. Each game is served at
// http://<domain>.localhost:<port>/<game>/ (browsers resolve every
// *.localhost name to loopback; the server maps <domain>.localhost to
// <domain>), and a page on a loopback origin may open every game's socket
// without the game's `origins` naming it.
//
// What the author needs while playing goes to the terminal: each sync and
// reload, generator problems, hook failures, instance.log lines and players
// joining and leaving, each with its game and instance. The playground at
// http://localhost:<port>/ (playground.go) shows the games' instances live
// and opens players side by side.
package dev

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/gen"
	"github.com/hoster-dev/hoster/pkg/hostserver"
	"github.com/hoster-dev/hoster/pkg/layout"
	"github.com/hoster-dev/hoster/pkg/mirror"
	"github.com/hoster-dev/hoster/pkg/runtime"
)

// DefaultPort is the port tried first.
const DefaultPort = 8080

// ErrNotDir is returned when the root to run is not a directory.
var ErrNotDir = errors.New("not a directory")

// Options configure Run.
type Options struct {
	// Root is the sites tree: <domain>/<game>/ folders.
	Root string
	// Port is tried first; when it is taken another free one is used, and
	// said. 0 takes any free port.
	Port int
	// Out receives the playground's URL, then the URL of each game as it
	// first loads.
	Out io.Writer
	// Log receives everything else: syncs, reloads, problems, game logs.
	Log io.Writer
	// Debounce is the quiet period after a save before the sync: 200 ms.
	Debounce time.Duration
	// Release is the hoster release that generated files record (gen's
	// Options.Release): the calling program's own.
	Release string
}

// Run serves until ctx ends, then stops everything and removes the
// temporary hosting root.
func Run(ctx context.Context, o Options) error {
	if st, err := os.Stat(o.Root); err != nil || !st.IsDir() {
		return fmt.Errorf("running %s: %w", o.Root, ErrNotDir)
	}
	o.defaults()
	log := slog.New(newTermHandler(o.Log))

	tmp, err := os.MkdirTemp("", "hoster-dev-")
	if err != nil {
		return fmt.Errorf("making the temporary hosting root: %w", err)
	}
	defer os.RemoveAll(tmp)

	ln, err := listen(o.Port, o.Log)
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	token := newToken()
	host, err := hostserver.New(hostserver.Options{
		HostingRoot: tmp, Token: token, ReloadDebounce: 100 * time.Millisecond, Logger: log,
		// Every socket of hoster dev is the developer's, from one address:
		// only the game's own bound on its instances applies.
		Runtime:  runtime.Options{RoomsPerMinute: -1, SocketsPerAddress: -1},
		OnReload: announcer(o.Out, port),
	})
	if err != nil {
		ln.Close()
		return err
	}
	defer host.Close()
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); watchMemory(wctx, host.Runtime(), memoryWatch, log) }()
	defer func() { stopWatch(); <-watched }()
	hs := &http.Server{Handler: Playground(host.Runtime(), port, log, Localhost(host.Handler())), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(o.Out, "playground  %s\n", PlaygroundURL(port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	client, err := apiclient.NewClient(apiclient.ClientConfig{Server: base, Token: token, Attempts: 1})
	if err != nil {
		hs.Close()
		return err
	}
	failure := syncAndWatch(ctx, o, client, served)
	fmt.Fprintln(o.Log, "stopping")
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	host.Shutdown(shut)
	hs.Shutdown(shut)
	return failure
}

// announcer says on out where each game is played, the first time it is
// loaded after a sync.
func announcer(out io.Writer, port int) func(domain, game string, loaded bool) {
	var mu sync.Mutex
	announced := map[string]bool{}
	return func(domain, game string, loaded bool) {
		mu.Lock()
		defer mu.Unlock()
		if key := domain + "/" + game; loaded && !announced[key] {
			announced[key] = true
			fmt.Fprintf(out, "%s  %s\n", key, URL(domain, game, port))
		}
	}
}

// defaults fills the options left zero.
func (o *Options) defaults() {
	if o.Debounce <= 0 {
		o.Debounce = 200 * time.Millisecond
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// syncAndWatch syncs the tree into the server through client, then again
// on every save, until ctx ends, the server stops serving (served) or the
// watch fails: the failure, if one ended it.
func syncAndWatch(ctx context.Context, o Options, client *apiclient.Client, served <-chan error) error {
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	push := func() { syncOnce(wctx, o.Root, o.Release, client, o.Log) }
	push()
	if games, err := layout.Games(o.Root); err == nil && len(games) == 0 {
		fmt.Fprintf(o.Log, "no game under %s yet: a game is a folder <domain>/<game>/ holding hoster-game.json\n", o.Root)
	}
	watched := make(chan error, 1)
	ready := func() { fmt.Fprintf(o.Log, "watching %s for changes; Ctrl-C stops\n", o.Root) }
	go func() { watched <- mirror.Watch(wctx, o.Root, o.Debounce, ready, push) }()

	select {
	case <-ctx.Done():
		<-watched
		return nil
	case err := <-served:
		stopWatch()
		<-watched
		return fmt.Errorf("serving: %w", err)
	case err := <-watched:
		return err
	}
}

// URL is where a game is played in dev.
func URL(domain, game string, port int) string {
	return fmt.Sprintf("http://%s.localhost:%d/%s/", domain, port, game)
}

// listen listens on 127.0.0.1:port, or on a free port when port is taken,
// saying so.
func listen(port int, log io.Writer) (net.Listener, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err == nil || port == 0 || !errors.Is(err, syscall.EADDRINUSE) {
		if err != nil {
			return nil, fmt.Errorf("listening on 127.0.0.1:%d: %w", port, err)
		}
		return ln, nil
	}
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on a free port: %w", err)
	}
	fmt.Fprintf(log, "port %d is taken; using port %d instead\n", port, ln.Addr().(*net.TCPAddr).Port)
	return ln, nil
}

// syncOnce generates (recording release) and syncs root as hoster sync
// does, reporting to log.
func syncOnce(ctx context.Context, root, release string, client mirror.Remote, log io.Writer) {
	start := time.Now()
	// As hoster sync does: a game that fails to generate keeps running its
	// last good version; the others are pushed.
	generate := func() ([]string, error) {
		res, err := gen.GenerateWith(root, gen.Options{Release: release})
		if err != nil {
			return nil, fmt.Errorf("generating: %w", err)
		}
		for _, p := range res.Problems() {
			fmt.Fprintf(log, "%s\n", p)
		}
		return res.Broken(), nil
	}
	sum, err := mirror.Sync(ctx, root, client, mirror.SyncOptions{Prepare: generate}, nil)
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(log, "sync: %v\n", err)
		}
		return
	}
	for _, f := range sum.Failures {
		fmt.Fprintf(log, "sync failed: %s %s: %s\n", f.Op, f.Path, f.Error)
	}
	for _, g := range sum.Left {
		fmt.Fprintf(log, "%s: not generated, so it keeps running its last good version; fix the problems above and save again\n", g)
	}
	fmt.Fprintf(log, "synced %s: %d uploaded, %d deleted, %d unchanged in %.1fs\n",
		root, sum.Uploaded, sum.Deleted, sum.Unchanged, time.Since(start).Seconds())
}

// Localhost maps a request for <domain>.localhost to <domain> (keeping the
// port), and lets a page on a loopback origin (localhost, *.localhost,
// 127.0.0.1, [::1]) open any game's socket: its Origin is taken off, which
// the runtime treats as a client that is not a browser page.
func Localhost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, port, err := net.SplitHostPort(r.Host)
		if err != nil {
			host, port = r.Host, ""
		}
		if d, ok := strings.CutSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), ".localhost"); ok && d != "" {
			r.Host = d
			if port != "" {
				r.Host = net.JoinHostPort(d, port)
			}
		}
		if origin := r.Header.Get("Origin"); origin != "" && loopbackOrigin(origin) {
			r.Header.Del("Origin")
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackOrigin(origin string) bool {
	_, hostport, ok := strings.Cut(origin, "://")
	if !ok {
		return false
	}
	host := bareHost(hostport)
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || loopbackIP(host)
}

// bareHost is the host of host[:port], lower case, without an IPv6
// address's brackets.
func bareHost(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

func loopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
