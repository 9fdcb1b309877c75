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
	"github.com/hoster-dev/hoster/pkg/notfound"
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
	// Publish, if set, is given what a write, a delete or a batch changed,
	// once it is on disk and before the answer: a fleet of servers publishes
	// it to every node (pkg/fleet). Its error fails the request as a failed
	// write or delete does.
	Publish func([]store.Change) error
	// Hold, if set, is taken for a game before a write, a delete or a
	// batch changes it on disk, and released once Publish has returned:
	// the fleet keeps its writes of other nodes' syncs off the game
	// meanwhile, so that none lands in the middle of a request.
	Hold func(domain, game string) (release func())
	// Tree, if set, answers GET /api/tree (and a batch's tree=1) in place
	// of the tree on disk: a fleet's published tree.
	Tree func() (map[string]string, error)
	// BodyStall is how long an authenticated upload's body may send
	// nothing before the upload is cut off; 0 means 60 s. It replaces the
	// listener's ReadTimeout for that request, so a large upload over a
	// slow link goes through as long as it moves.
	BodyStall time.Duration
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
	if opts.BodyStall <= 0 {
		opts.BodyStall = 60 * time.Second
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
		"GET " + api.PathTree:    s.handle(s.tree),
		"PUT " + api.PathFile:    s.handle(s.putFile),
		"DELETE " + api.PathFile: s.handle(s.deleteFile),
		"PUT " + api.PathFiles:   s.handle(s.putFiles),
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
		notfound.Write(w)
		return
	}
	s.opts.Games.ServeHTTP(w, r)
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token == "" {
		refuse(w, r)
		return
	}
	key := r.Method + " " + r.URL.Path
	// Version is the only route without a token; everything else, known
	// or not, is checked first, so an unknown route and a bad token are
	// indistinguishable.
	if key != "GET "+api.PathVersion && !s.authorized(r) {
		refuse(w, r)
		return
	}
	h, ok := s.routes[key]
	if !ok || r.URL.RawPath != "" {
		notfound.Write(w)
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

// refuse answers a request the API will not serve (no token file, a
// missing or wrong token) with the uniform 404, at once and without reading
// its body: a stranger's body, however slowly it comes, holds nothing open.
// A request with a body gets "Connection: close", and its reads end now, so
// the server does not wait for the rest of the body once it has answered.
func refuse(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		notfound.Write(w)
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now())
	notfound.WriteClosing(w)
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	v := api.VersionInfo{API: api.Version, BatchUpload: true,
		BatchMaxFiles: BatchMaxFiles, BatchMaxBytes: s.batchMaxBytes(), BatchMaxNameBytes: BatchMaxNameBytes}
	if _, ok := s.routes["POST "+api.ToolsPath(api.Version, api.PathFilesBatch)]; ok {
		v.BatchDownload, v.BatchDownloadMaxFiles = true, api.FetchMaxFiles // pkg/tools serves it
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) tree(w http.ResponseWriter, r *http.Request) error {
	tree, err := s.gamesTree()
	if err != nil {
		return fmt.Errorf("hashing the games tree: %w", err)
	}
	writeJSON(w, http.StatusOK, api.Tree(tree))
	return nil
}

// gamesTree is the tree GET /api/tree answers: Options.Tree's, or the
// disk's.
func (s *Server) gamesTree() (map[string]string, error) {
	if s.opts.Tree != nil {
		return s.opts.Tree()
	}
	return s.store.Tree()
}

// publish gives Options.Publish what a request changed; op is "write" or
// "delete", for the failure's answer.
func (s *Server) publish(op string, changes []store.Change) error {
	if s.opts.Publish == nil || len(changes) == 0 {
		return nil
	}
	if err := s.opts.Publish(changes); err != nil {
		s.log.Warn("publishing to the fleet failed", "err", err)
		return &opError{op: op, status: http.StatusInternalServerError, msg: "publishing to the fleet: " + err.Error(), cause: err}
	}
	return nil
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

func (s *Server) putFile(w http.ResponseWriter, r *http.Request) error {
	rel := pathParam(r)
	if _, err := store.CleanPath(rel); err != nil || strings.Count(rel, "/")+1 < store.MinWriteDepth {
		return errInvalidPath
	}
	held := s.holds()
	defer held.release()
	held.take(rel)
	if r.ContentLength > s.opts.MaxUpload {
		return s.tooLarge()
	}
	body := &movingBody{r: r.Body, rc: http.NewResponseController(w), stall: s.opts.BodyStall}
	wr, err := s.store.Write(rel, body, s.opts.MaxUpload)
	switch {
	case errors.Is(err, store.ErrInvalidPath):
		return errInvalidPath
	case errors.Is(err, store.ErrTooLarge):
		return s.tooLarge()
	case err != nil:
		return writeFailed(http.StatusInternalServerError, err)
	}
	markChanged(s.debouncer, rel)
	if err := s.publish("write", []store.Change{{Path: rel, SHA256: wr.SHA256}}); err != nil {
		return err
	}
	res := api.WriteResult{Size: wr.Size}
	if s.opts.Variant == api.Variant2 {
		res.OK = api.Bool(true)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// tooLarge is an upload over the server's limit.
func (s *Server) tooLarge() error {
	return &opError{op: "write", status: http.StatusRequestEntityTooLarge,
		msg: fmt.Sprintf("upload exceeds the server's limit of %d bytes", s.opts.MaxUpload)}
}

// movingBody reads an upload's body with a read deadline pushed forward
// before every read: the body may take as long as it needs, but may not
// stall for longer than stall.
type movingBody struct {
	r     io.Reader
	rc    *http.ResponseController
	stall time.Duration
}

func (b *movingBody) Read(p []byte) (int, error) {
	b.rc.SetReadDeadline(time.Now().Add(b.stall)) // unsupported (a test recorder): no deadline
	return b.r.Read(p)
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) error {
	rel := pathParam(r)
	held := s.holds()
	defer held.release()
	held.take(rel)
	err := s.store.Delete(rel)
	switch {
	case errors.Is(err, store.ErrInvalidPath):
		return errInvalidPath
	case err != nil:
		return deleteFailed(err)
	}
	markChanged(s.debouncer, rel)
	if err := s.publish("delete", []store.Change{{Path: rel}}); err != nil {
		return err
	}
	if s.opts.Variant == api.Variant2 {
		writeJSON(w, http.StatusOK, api.DeleteResult{OK: api.Bool(true)})
		return nil
	}
	writeJSON(w, http.StatusOK, api.DeleteResult{Deleted: api.Bool(true)})
	return nil
}

// reload runs after a push went quiet: the game is reloaded. (The tree's
// hash cache needs no warming: each upload cached its own hash.)
func (s *Server) reload(domain, game string) {
	if s.opts.OnReload != nil {
		s.opts.OnReload(domain, game)
	}
}

// held are the games a request holds (Options.Hold) until it answers.
type held struct {
	hold  func(domain, game string) func()
	games map[string]func()
}

func (s *Server) holds() *held { return &held{hold: s.opts.Hold} }

// take holds the game of rel, unless this request holds it already (or
// there is no Options.Hold, or rel is in no game).
func (h *held) take(rel string) {
	domain, game, ok := store.GameOf(rel)
	if h.hold == nil || !ok {
		return
	}
	if _, ok := h.games[domain+"/"+game]; ok {
		return
	}
	if h.games == nil {
		h.games = map[string]func(){}
	}
	h.games[domain+"/"+game] = h.hold(domain, game)
}

func (h *held) release() {
	for _, release := range h.games {
		release()
	}
}

// marker is what records a change for the reload: the server's
// [store.Debouncer], or a batch upload's [store.Batch].
type marker interface{ Mark(domain, game string) }

// markChanged marks the game of rel changed.
func markChanged(m marker, rel string) {
	if domain, game, ok := store.GameOf(rel); ok {
		m.Mark(domain, game)
	}
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
