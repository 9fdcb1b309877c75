// Package contracttest starts a real hoster-server (pkg/server) on a
// loopback httptest listener, with a client of pkg/apiclient for it, for the
// tests on either side of the contract: what rclone's fstest is to its
// backends. Every test that needs a server of the contract starts it here,
// and [EachVariant] runs a test against both of its published forms.
//
// A test that needs the server to misbehave wraps the real one
// ([Options.Wrap]); a server that answers what no real one would (another
// API version, hostile bodies) stays a fake of its own test. No program
// links this package: only _test files import it.
package contracttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/server"
)

// Token is the API token of a server started without one of its own.
const Token = "7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de7e57c0de"

// Options say which server to start. The zero value is a variant 1 server
// with an empty games root, the token [Token], on plain http.
type Options struct {
	// Variant is the contract's published form; 0 means variant 1.
	Variant api.Variant
	// Token is the bearer token; "" means [Token].
	Token string
	// GamesRoot is {hosting_root}/hoster-games, for a test that fills it
	// before the server opens it; "" means one in a new temporary folder.
	GamesRoot string
	// MaxUpload is the server's upload limit; 0 means its default.
	MaxUpload int64
	// Routes, when set, are further authenticated routes (the tools API),
	// made once the env's Variant and LogsRoot are known.
	Routes func(e *Env) map[string]http.Handler
	// Wrap, when set, stands in front of the server's handler: to count
	// requests, fail some, or cut the connection. It is given the real
	// handler and returns what the listener serves.
	Wrap func(h http.Handler) http.Handler
	// TLS serves https with httptest's self-signed certificate; the
	// client pins it unless Client says otherwise.
	TLS bool
	// Unstarted, when set, adjusts the listener before it starts
	// (EnableHTTP2, Config.ConnState).
	Unstarted func(s *httptest.Server)
	// Client configures the env's client; its Server and Token are the
	// env's, and over TLS its CertSHA256 is the certificate's pin unless
	// it sets a pin or InsecureSkipVerify. Zero values mean apiclient's
	// defaults.
	Client apiclient.ClientConfig
}

// Env is a running server and a client for it; both end with the test.
type Env struct {
	Variant   api.Variant
	Token     string
	GamesRoot string
	// LogsRoot is {logs_root}, a temporary folder, for Routes; "" when
	// there are none.
	LogsRoot string
	// URL is the server's base URL (http://127.0.0.1:port, or https).
	URL string
	// Server is the real server; Handler is its handler, without Wrap.
	Server  *server.Server
	Handler http.Handler
	// HTTP is the listener (its Certificate, over TLS).
	HTTP *httptest.Server
	// Client is a client of the server, configured by Options.Client.
	Client *apiclient.Client
}

// Start starts the server o describes, and a client for it.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	e := &Env{Variant: o.Variant, Token: o.Token, GamesRoot: o.GamesRoot}
	if e.Variant == 0 {
		e.Variant = api.Variant1
	}
	if e.Token == "" {
		e.Token = Token
	}
	if e.GamesRoot == "" {
		e.GamesRoot = filepath.Join(t.TempDir(), "hoster-games")
	}
	opts := server.Options{GamesRoot: e.GamesRoot, Token: e.Token, Variant: e.Variant, MaxUpload: o.MaxUpload}
	if o.Routes != nil {
		e.LogsRoot = t.TempDir()
		opts.Routes = o.Routes(e)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatalf("starting the contract's server: %v", err)
	}
	e.Server, e.Handler = srv, srv.Handler()
	h := e.Handler
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	e.HTTP = httptest.NewUnstartedServer(h)
	if o.Unstarted != nil {
		o.Unstarted(e.HTTP)
	}
	if o.TLS {
		e.HTTP.StartTLS()
	} else {
		e.HTTP.Start()
	}
	t.Cleanup(func() { e.HTTP.Close(); srv.Close() })
	e.URL = e.HTTP.URL
	e.Client = e.NewClient(t, o.Client)
	return e
}

// NewClient is another client of the server, configured by cfg as
// [Options.Client] is.
func (e *Env) NewClient(t testing.TB, cfg apiclient.ClientConfig) *apiclient.Client {
	t.Helper()
	cfg.Server, cfg.Token = e.URL, e.Token
	if cert := e.HTTP.Certificate(); cert != nil && cfg.CertSHA256 == "" && !cfg.InsecureSkipVerify {
		cfg.CertSHA256 = apiclient.Fingerprint(cert.Raw)
	}
	c, err := apiclient.NewClient(cfg)
	if err != nil {
		t.Fatalf("making a client of the contract's server: %v", err)
	}
	return c
}

// Variants are the contract's published forms, in order.
var Variants = []api.Variant{api.Variant1, api.Variant2}

// EachVariant runs f as a subtest per variant of the contract, named
// "variant1", "variant2".
func EachVariant(t *testing.T, f func(t *testing.T, v api.Variant)) {
	t.Helper()
	for _, v := range Variants {
		t.Run(fmt.Sprint("variant", v), func(t *testing.T) { f(t, v) })
	}
}
