// Command demo runs hoster end to end on loopback: it starts hoster-server
// with a fresh token in a temporary root, syncs the example sites with the
// hoster client, and serves the example game's page through a small dev proxy
// that stands where Caddy stands in production (it forwards the game's routes
// with the game's domain as Host). It prints the URL to open and the commands
// to try next, and stops everything it started on Ctrl-C.
//
// With -smoke it makes one socket round trip (welcome, a command, an update)
// and exits: CI runs that as a check of the whole path.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/deploy"
)

const (
	domain = "example.com"
	game   = "arena"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding the hoster and hoster-server binaries")
	sites := flag.String("sites", "examples/sites", "the sites tree to sync")
	port := flag.Int("port", 8080, "port of the page (0 picks a free one)")
	smoke := flag.Bool("smoke", false, "make one socket round trip and exit")
	flag.Parse()
	if err := run(*bin, *sites, *port, *smoke); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func run(bin, sites string, port int, smoke bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "hoster-demo-")
	if err != nil {
		return fmt.Errorf("making the demo root: %w", err)
	}
	defer os.RemoveAll(tmp)
	hostingRoot, logsRoot := filepath.Join(tmp, "srv"), filepath.Join(tmp, "logs")
	if err := os.MkdirAll(hostingRoot, 0o755); err != nil {
		return err
	}
	token, err := deploy.NewToken()
	if err != nil {
		return err
	}
	if err := deploy.WriteToken(filepath.Join(hostingRoot, api.TokenFile), token); err != nil {
		return err
	}

	listen, ask := freeAddr(), freeAddr()
	server := exec.CommandContext(ctx, filepath.Join(bin, "hoster-server"), "serve",
		"--hosting-root", hostingRoot, "--logs-root", logsRoot,
		"--listen", listen, "--ask-listen", ask, "--access-log", "--reload-debounce", "100ms")
	server.Stdout, server.Stderr = os.Stderr, os.Stderr
	server.Cancel = func() error { return server.Process.Signal(syscall.SIGTERM) }
	server.WaitDelay = 10 * time.Second
	if err := server.Start(); err != nil {
		return fmt.Errorf("starting hoster-server: %w", err)
	}
	defer server.Wait()
	defer stop()
	if err := waitFor(ctx, "http://"+listen+api.PathVersion, 10*time.Second); err != nil {
		return fmt.Errorf("waiting for hoster-server: %w", err)
	}

	// The client reads its settings from a config file, as a user's would.
	config := filepath.Join(tmp, "hoster.json")
	settings, _ := json.MarshalIndent(map[string]string{
		"hoster-config-server":   "http://" + listen,
		"hoster-config-apiToken": token,
	}, "", "  ")
	if err := os.WriteFile(config, settings, 0o600); err != nil {
		return err
	}
	sync := exec.CommandContext(ctx, filepath.Join(bin, "hoster"), "sync", sites, "--config", config)
	sync.Stdout, sync.Stderr = os.Stderr, os.Stderr
	if err := sync.Run(); err != nil {
		return fmt.Errorf("hoster sync: %w", err)
	}
	// The game is served once the debounced reload has loaded it.
	if err := waitFor(ctx, "http://"+ask+"/ask?domain="+domain, 10*time.Second); err != nil {
		return fmt.Errorf("waiting for the game to load: %w", err)
	}

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("serving the page (try -port 0): %w", err)
	}
	page := &http.Server{Handler: pageHandler(filepath.Join(sites, domain, game), listen)}
	go page.Serve(ln)
	defer page.Close()
	pageURL := "http://" + ln.Addr().String() + "/" + game + "/"

	if smoke {
		return roundTrip(ctx, "ws://"+ln.Addr().String()+"/"+game)
	}
	fmt.Printf(`
hoster demo is running.

  Open the game:   %s   (open it in two windows and play)

Try next, in another terminal:
  %s/hoster --config %s version
  %s/hoster --config %s pull %s/mirror
  %s/hoster --config %s sync --watch %s    (edit a hook, see it live)

Ctrl-C stops everything.
`, pageURL, bin, config, bin, config, tmp, bin, config, sites)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "\ndemo: stopping")
	return nil
}

// pageHandler serves the game's own page and assets from its folder, and
// forwards the game's routes (its socket and its library) to hoster-server as
// Caddy would, presenting the page as the game's domain.
func pageHandler(gameDir, upstream string) http.Handler {
	target := &url.URL{Scheme: "http", Host: upstream}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = domain
		r.Out.Header.Set("Origin", "https://"+domain)
	}}
	files := http.StripPrefix("/"+game+"/", http.FileServer(http.Dir(gameDir)))
	mux := http.NewServeMux()
	mux.Handle("/"+game, proxy)
	mux.Handle("/"+game+"/"+api.ClientLibrary, proxy)
	mux.Handle("/"+game+"/", files)
	mux.Handle("/", http.RedirectHandler("/"+game+"/", http.StatusFound))
	return mux
}

// roundTrip joins the game, moves, and waits for the update that shows it.
func roundTrip(ctx context.Context, wsURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL+"?name=smoke", nil)
	if err != nil {
		return fmt.Errorf("smoke: joining the game: %w", err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var welcome struct {
		T, Player, Instance string
	}
	if err := conn.ReadJSON(&welcome); err != nil || welcome.T != "welcome" {
		return fmt.Errorf("smoke: want a welcome, got %+v, %v", welcome, err)
	}
	if err := conn.WriteJSON(map[string]any{"c": "move", "a": map[string]any{"dx": 1, "dy": 0}}); err != nil {
		return fmt.Errorf("smoke: sending a command: %w", err)
	}
	for {
		var m struct {
			T      string
			Error  string
			Change []struct{ ID string }
		}
		if err := conn.ReadJSON(&m); err != nil {
			return fmt.Errorf("smoke: waiting for an update: %w", err)
		}
		if m.T == "error" {
			return fmt.Errorf("smoke: the server refused the command: %s", m.Error)
		}
		for _, c := range m.Change {
			if c.ID == welcome.Player {
				fmt.Printf("smoke: ok: joined %s/%s instance %s as %s, moved, saw the change\n", domain, game, welcome.Instance, welcome.Player)
				return nil
			}
		}
	}
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(ctx context.Context, u string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", u, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
