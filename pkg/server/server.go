// Package server is hoster-server's HTTP front: bearer authentication, the
// uniform 404 that tells a probe nothing, the Sync API over [store.Store] in
// both variants of the contract, and the dispatch of the tools routes and of
// everything outside /api (the game runtime).
//
// Authenticated routes are matched exactly (method and path), with no
// redirects or path cleaning, so nothing but the uniform 404 ever answers an
// unknown, unauthenticated or mistyped request.
package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/store"
)

// DefaultMaxUpload is the upload limit when Options.MaxUpload is 0.
const DefaultMaxUpload = 512 << 20

// Options configure a Server.
type Options struct {
	// GamesRoot is {hosting_root}/hoster-games; it is created if absent.
	GamesRoot string
	// Store, when set, is the games mirror already opened on GamesRoot and
	// shared with the game pages (whose ETags come from its hash cache); the
	// server then leaves closing it to its opener.
	Store *store.Store
	// Token is the bearer token; "" turns the whole /api tree off (every
	// request to it is the uniform 404).
	Token string
	// Variant selects the contract's published form; 0 means variant 1.
	Variant api.Variant
	// MaxUpload is the largest accepted PUT body in bytes; 0 means 512 MiB.
	MaxUpload int64
	// ReloadDebounce is the quiet period before changed games are reloaded;
	// 0 means 500 ms.
	ReloadDebounce time.Duration
	// OnReload is called once per changed game after the quiet period.
	OnReload func(domain, game string)
	// Routes are further authenticated routes keyed "METHOD /path", such as
	// "GET /api/v1/logs"; they are matched exactly.
	Routes map[string]http.Handler
	// Games serves everything outside /api; nil answers 404.
	Games http.Handler
	// Logger receives request failures; nil discards them.
	Logger *slog.Logger
}

// Server is the --listen handler of hoster-server.
type Server struct {
	opts      Options
	store     *store.Store
	debouncer *store.Debouncer
	tokenSum  [32]byte
	routes    map[string]http.Handler
	log       *slog.Logger
}

// New opens the games root and builds the server.
func New(opts Options) (*Server, error) {
	if opts.Variant == 0 {
		opts.Variant = api.Variant1
	}
	if opts.Variant != api.Variant1 && opts.Variant != api.Variant2 {
		return nil, fmt.Errorf("starting the server: unknown variant %d", opts.Variant)
	}
	if opts.MaxUpload <= 0 {
		opts.MaxUpload = DefaultMaxUpload
	}
	if opts.ReloadDebounce <= 0 {
		opts.ReloadDebounce = 500 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	st := opts.Store
	if st == nil {
		var err error
		if st, err = store.Open(opts.GamesRoot); err != nil {
			return nil, err
		}
	}
	s := &Server{
		opts:     opts,
		store:    st,
		log:      opts.Logger,
		tokenSum: sha256.Sum256([]byte(opts.Token)),
	}
	s.debouncer = store.NewDebouncer(opts.ReloadDebounce, s.reload)
	s.routes = map[string]http.Handler{
		"GET " + api.PathVersion: http.HandlerFunc(s.version),
		"GET " + api.PathTree:    http.HandlerFunc(s.tree),
		"PUT " + api.PathFile:    http.HandlerFunc(s.putFile),
		"DELETE " + api.PathFile: http.HandlerFunc(s.deleteFile),
	}
	for k, h := range opts.Routes {
		_, path, ok := strings.Cut(k, " ")
		if _, dup := s.routes[k]; dup || !ok || !strings.HasPrefix(path, "/api/") {
			if opts.Store == nil {
				st.Close()
			}
			return nil, fmt.Errorf("starting the server: route %q clashes or is outside /api/", k)
		}
		s.routes[k] = h
	}
	return s, nil
}

// Close flushes pending reloads and releases the games root.
func (s *Server) Close() error {
	s.debouncer.Close()
	if s.opts.Store != nil {
		return nil
	}
	return s.store.Close()
}

// Handler returns the --listen handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/api" || strings.HasPrefix(p, "/api/") {
		s.serveAPI(w, r)
		return
	}
	if s.opts.Games == nil {
		NotFound(w)
		return
	}
	s.opts.Games.ServeHTTP(w, r)
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token == "" {
		NotFound(w)
		return
	}
	key := r.Method + " " + r.URL.Path
	// Version is the only route without a token; everything else, known
	// or not, is checked first, so an unknown route and a bad token are
	// indistinguishable.
	if key != "GET "+api.PathVersion && !s.authorized(r) {
		NotFound(w)
		return
	}
	h, ok := s.routes[key]
	if !ok || r.URL.RawPath != "" {
		NotFound(w)
		return
	}
	h.ServeHTTP(w, r)
}

// authorized compares the bearer token in constant time. Both sides are
// hashed first so that not even the token's length shows in the timing.
func (s *Server) authorized(r *http.Request) bool {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(h[len(prefix):]))
	return subtle.ConstantTimeCompare(got[:], s.tokenSum[:]) == 1
}

// NotFound writes the uniform 404: the same status, headers and body for a
// missing or wrong token, an unknown route, a wrong version prefix and, in
// variant 2, an unsafe path.
func NotFound(w http.ResponseWriter) {
	h := w.Header()
	for k := range h {
		delete(h, k)
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", fmt.Sprint(len(notFoundBody)))
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, notFoundBody)
}

const notFoundBody = "404 page not found\n"

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.VersionInfo{API: api.Version})
}

func (s *Server) tree(w http.ResponseWriter, r *http.Request) {
	tree, err := s.store.Tree()
	if err != nil {
		s.log.Error("hashing the games tree", "err", err)
		writeJSON(w, http.StatusInternalServerError, api.ErrorBody{Error: "hashing the games tree failed"})
		return
	}
	writeJSON(w, http.StatusOK, api.Tree(tree))
}

// pathParam returns the single path query parameter, or "" when there is
// none or more than one.
func pathParam(r *http.Request) string {
	v := r.URL.Query()[api.QueryPath]
	if len(v) != 1 {
		return ""
	}
	return v[0]
}

func (s *Server) putFile(w http.ResponseWriter, r *http.Request) {
	rel := pathParam(r)
	if _, err := store.CleanPath(rel); err != nil || strings.Count(rel, "/")+1 < store.MinWriteDepth {
		s.invalidPath(w)
		return
	}
	var n int64
	var err error
	if r.ContentLength > s.opts.MaxUpload {
		err = store.ErrTooLarge
	} else {
		n, err = s.store.Write(rel, r.Body, s.opts.MaxUpload)
	}
	switch {
	case errors.Is(err, store.ErrInvalidPath):
		s.invalidPath(w)
		return
	case errors.Is(err, store.ErrTooLarge):
		s.writeFailed(w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("upload exceeds the server's limit of %d bytes", s.opts.MaxUpload))
		return
	case err != nil:
		s.log.Warn("writing a file", "path", rel, "err", err)
		s.writeFailed(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.markChanged(rel)
	res := api.WriteResult{Size: n}
	if s.opts.Variant == api.Variant2 {
		res.OK = api.Bool(true)
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	rel := pathParam(r)
	err := s.store.Delete(rel)
	switch {
	case errors.Is(err, store.ErrInvalidPath):
		s.invalidPath(w)
		return
	case err != nil:
		s.log.Warn("deleting a path", "path", rel, "err", err)
		if s.opts.Variant == api.Variant2 {
			writeJSON(w, http.StatusOK, api.DeleteResult{OK: api.Bool(false), Error: err.Error()})
		} else {
			writeJSON(w, http.StatusInternalServerError, api.ErrorBody{Error: err.Error()})
		}
		return
	}
	s.markChanged(rel)
	if s.opts.Variant == api.Variant2 {
		writeJSON(w, http.StatusOK, api.DeleteResult{OK: api.Bool(true)})
		return
	}
	writeJSON(w, http.StatusOK, api.DeleteResult{Deleted: api.Bool(true)})
}

// reload runs after a push went quiet: the game is reloaded. (The tree's
// hash cache needs no warming: each upload cached its own hash.)
func (s *Server) reload(domain, game string) {
	if s.opts.OnReload != nil {
		s.opts.OnReload(domain, game)
	}
}

func (s *Server) markChanged(rel string) {
	if domain, game, ok := store.GameOf(rel); ok {
		s.debouncer.Mark(domain, game)
	}
}

// invalidPath answers an unsafe path: variant 1 400 {error:"invalid path"},
// variant 2 the uniform 404.
func (s *Server) invalidPath(w http.ResponseWriter) {
	if s.opts.Variant == api.Variant2 {
		NotFound(w)
		return
	}
	writeJSON(w, http.StatusBadRequest, api.ErrorBody{Error: api.ErrInvalidPath})
}

// writeFailed answers a failed write: variant 1 with status and {error},
// variant 2 with 200 {ok:false, error}.
func (s *Server) writeFailed(w http.ResponseWriter, status int, msg string) {
	if s.opts.Variant == api.Variant2 {
		writeJSON(w, http.StatusOK, api.WriteResult{OK: api.Bool(false), Error: msg})
		return
	}
	writeJSON(w, status, api.ErrorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)+1))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
