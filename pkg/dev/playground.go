package dev

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hoster-dev/hoster/pkg/runtime"
)

// The playground is hoster dev's own page at http://localhost:<port>/: the
// games and their instances (players, state fields, tick and send timings,
// hook errors with file:line), a button that opens N players of a game side
// by side in one private room, and a live inspector of an instance's state
// and of a player's view. It reads only what the runtime knows
// (runtime.Overview and runtime.Inspect) and is served by hoster dev alone:
// hoster-server mounts none of it.

// Playground paths: the page, and the JSON it polls.
const (
	PlaygroundPath    = "/"
	playgroundAPI     = "/_playground/api/"
	playgroundGames   = playgroundAPI + "games"
	playgroundInspect = playgroundAPI + "inspect"
)

//go:embed playground.html
var playgroundPage []byte

// inspectWait bounds how long an API answer waits for instances to reach
// their next tick (one at the slowest tick rate, 1 s, and some).
const inspectWait = 3 * time.Second

// PlaygroundURL is where the playground is opened.
func PlaygroundURL(port int) string {
	return fmt.Sprintf("http://localhost:%d%s", port, PlaygroundPath)
}

// Playground serves the playground to requests for localhost, 127.0.0.1
// or [::1] (any port), and passes every other request to next. A request
// naming another host, such as a page of a name rebound to 127.0.0.1, never
// reaches it.
func Playground(rt *runtime.Runtime, port int, log *slog.Logger, next http.Handler) http.Handler {
	p := &playground{rt: rt, port: port, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.page)
	mux.HandleFunc("GET "+playgroundGames, p.games)
	mux.HandleFunc("GET "+playgroundInspect, p.inspect)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if !loopbackHost(r.Host) || (path != PlaygroundPath && !strings.HasPrefix(path, playgroundAPI)) {
			next.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

type playground struct {
	rt   *runtime.Runtime
	port int
	log  *slog.Logger
}

// loopbackHost reports whether a Host header names this machine itself:
// localhost, 127.0.0.1 or [::1], with or without a port.
func loopbackHost(hostport string) bool {
	host := bareHost(hostport)
	return host == "localhost" || loopbackIP(host)
}

func (p *playground) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(playgroundPage)
}

// gameEntry is a game in the games answer: the runtime's overview, the URL
// of its page, and each instance's state fields.
type gameEntry struct {
	runtime.GameOverview
	URL       string     `json:"url"`
	Instances []instance `json:"instances"`
}

type instance struct {
	runtime.InstanceOverview
	// StateFields are the names of instance.state's own fields, sorted; null
	// when the instance did not answer in time.
	StateFields []string `json:"stateFields"`
}

// games answers GET /_playground/api/games: every game and instance.
func (p *playground) games(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), inspectWait)
	defer cancel()
	out := []gameEntry{}
	var wg sync.WaitGroup
	for _, g := range p.rt.Overview() {
		e := gameEntry{GameOverview: g, URL: URL(g.Domain, g.Name, p.port), Instances: make([]instance, len(g.Instances))}
		for i, in := range g.Instances {
			e.Instances[i].InstanceOverview = in
			wg.Add(1)
			go func(dst *instance) {
				defer wg.Done()
				dst.StateFields = p.stateFields(ctx, g.Domain, g.Name, in.ID)
			}(&e.Instances[i])
		}
		out = append(out, e)
	}
	wg.Wait()
	writeJSON(w, map[string]any{"games": out})
}

// stateFields lists the fields of an instance's state, nil when it did not
// answer (it closed, or it is not an object).
func (p *playground) stateFields(ctx context.Context, domain, game, id string) []string {
	res, err := p.rt.Inspect(ctx, domain, game, id, "")
	if err != nil {
		return nil
	}
	var state map[string]json.RawMessage
	if json.Unmarshal(res.State, &state) != nil {
		return nil
	}
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// inspect answers GET /_playground/api/inspect?game=<domain>/<game>&instance=<id>[&player=<id>].
func (p *playground) inspect(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	domain, game, _ := strings.Cut(q.Get("game"), "/")
	ctx, cancel := context.WithTimeout(r.Context(), inspectWait)
	defer cancel()
	res, err := p.rt.Inspect(ctx, domain, game, q.Get("instance"), q.Get("player"))
	switch {
	case errors.Is(err, runtime.ErrNoInstance):
		writeError(w, http.StatusNotFound, err)
	case err != nil:
		p.log.Warn("playground: inspecting an instance", "err", err)
		writeError(w, http.StatusServiceUnavailable, err)
	default:
		writeJSON(w, res)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}
