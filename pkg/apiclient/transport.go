package apiclient

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// transports are the client's two transports, for uploads and for every
// other request, each under a watchdog (watchedTransport), and the
// predialer that opens upload connections ahead (nil through a proxy).
//
// Uploads go over HTTP/1.1, each on its own TCP connection and window:
// behind Caddy, Go's HTTP/2 server gives a connection a 1 MiB receive
// window, so many streams on one connection are held to 1 MiB a round trip
// (bench/link.sh: 19.5 s against 3.0 s at 50 ms). Every other request (the
// version, the tree, deletes, pulls) is small or a download, and where a
// TLS server offers HTTP/2 it goes over one HTTP/2 connection: no
// handshake of its own, and a download is not held by the server's window
// but by this client's, which is large.
func transports(u *url.URL, pin string, cfg ClientConfig) (uploads, small http.RoundTripper, pre *predialer) {
	conns := max(cfg.Conns, 8)
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	var tlsCfg *tls.Config
	if u.Scheme == "https" {
		tlsCfg = tlsConfig(u.Hostname(), pin, cfg.InsecureSkipVerify, cfg.Warn)
		tr.TLSClientConfig = tlsCfg
	}
	sm := tr.Clone()
	sm.ForceAttemptHTTP2 = true // with our own TLS config, HTTP/2 must be asked for
	// Frames of up to 1 MiB, not the 16 KiB a client takes unless it says
	// more: Caddy then sends a download in frames of its own copy's size
	// (32 KiB), each written to TLS as a 4 KiB piece and the rest, where a
	// 16 KiB frame is a 4 KiB piece and 12 KiB; a quarter fewer writes and
	// records for it, the proxies on the way and this client, and half the
	// window updates back (bench/pull-link.sh: Caddy's writes for a month
	// of logs 10,190 to 7,572).
	sm.HTTP2 = &http.HTTP2Config{MaxReadFrameSize: 1 << 20}
	tr.TLSClientConfig = tlsCfg.Clone()
	if tlsCfg != nil {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	// Connections opened ahead (Warm) are handed to the upload transport
	// as it asks for them; through a proxy from the environment there are
	// none.
	if proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err == nil && proxy == nil {
		pre = newPredialer(u, tr.TLSClientConfig)
		if tlsCfg != nil {
			tr.DialTLSContext = pre.get
		} else {
			tr.DialContext = pre.get
		}
	}
	header, stall := cfg.HeaderTimeout, cfg.StallTimeout
	wrap := func(t http.RoundTripper) http.RoundTripper { return t }
	if cfg.Wrap != nil {
		wrap = cfg.Wrap
	}
	return &watchedTransport{next: wrap(tr), header: header, stall: stall}, &watchedTransport{next: wrap(sm), header: header, stall: stall}, pre
}

// Fingerprint is the lowercase hex SHA-256 of a DER certificate.
func Fingerprint(der []byte) string {
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:])
}

func normalisePin(pin string) (string, error) {
	if pin == "" {
		return "", nil
	}
	p := strings.ToLower(strings.NewReplacer(":", "", " ", "").Replace(pin))
	if b, err := hex.DecodeString(p); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("reading the certificate pin: %q is not a SHA-256 fingerprint (64 hex digits)", pin)
	}
	return p, nil
}

// tlsConfig applies the TLS rules: a pin is checked exactly (and is the
// only check); with no pin the certificate is verified as usual, for an IP
// as for a name, unless verification is explicitly off, which warns.
func tlsConfig(host, pin string, insecure bool, warn func(string)) *tls.Config {
	// Full-size records from the first byte: the requests are uploads and
	// answers, not a page to show early, and each record costs the proxy
	// and the server a read and a seal. ServerName is set for an IP too, so
	// that its certificate is verified against it (no SNI is sent for one).
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, DynamicRecordSizingDisabled: true, ServerName: host}
	if pin == "" && !insecure {
		return cfg
	}
	var once sync.Once
	cfg.InsecureSkipVerify = true // replaced by VerifyConnection below
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the server sent no certificate")
		}
		got := Fingerprint(cs.PeerCertificates[0].Raw)
		if pin != "" {
			if got != pin {
				return &PinError{Got: got, Want: pin}
			}
			return nil
		}
		once.Do(func() {
			if warn != nil {
				warn(fmt.Sprintf("certificate verification is off (--insecure-skip-verify): the token goes to whichever server answers at %s; "+
					"pin it instead with hoster-config-certSha256 = %s, if that is the fingerprint hoster-server init printed", host, got))
			}
		})
		return nil
	}
	return cfg
}

// RTT is the shortest time seen between a request of a small answer
// (/api/version) written and the first byte of its answer: the link's round
// trip, plus the little the server takes. 0 until one was timed.
func (c *Client) RTT() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rtt
}

// timed adds a trace to ctx that keeps the shortest request-to-answer time.
func (c *Client) timed(ctx context.Context) context.Context {
	var wrote atomic.Int64 // the callbacks run on the transport's goroutines
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(time.Now().UnixNano()) },
		GotFirstResponseByte: func() {
			w := wrote.Load()
			if w == 0 {
				return
			}
			d := time.Duration(time.Now().UnixNano() - w)
			c.mu.Lock()
			if c.rtt == 0 || d < c.rtt {
				c.rtt = d
			}
			c.mu.Unlock()
		},
	})
}

// Warm opens connections to the server (TLS handshakes included) in the
// background until n have been opened, for the transport to take when
// transfers ask for connections: those find them ready, or wait for one
// already under way, instead of paying their own round trips or opening
// more. It returns at once; it is cheap to call again with the same or a
// larger n. Through a proxy it does nothing.
func (c *Client) Warm(ctx context.Context, n int) {
	c.mu.Lock()
	more := min(n, maxWarm) - c.warmed
	c.warmed = max(c.warmed, min(n, maxWarm))
	c.mu.Unlock()
	if c.pre != nil && more > 0 {
		c.pre.start(more)
	}
}

// maxWarm bounds the connections Warm opens over a client's life.
const maxWarm = 1024

// predialer opens connections ahead of the transport. Each connection it
// starts is claimed by exactly one later dial of the transport, which waits
// for it if it is still under way, and dials afresh if it failed; a dial
// with nothing to claim dials afresh. So Warm never makes the transport open
// more connections than it would have, only earlier.
type predialer struct {
	addr      string      // host:port
	tls       *tls.Config // nil for http
	mu        sync.Mutex
	unclaimed int
	results   chan dialResult
}

type dialResult struct {
	conn net.Conn
	err  error
}

func newPredialer(u *url.URL, tlsCfg *tls.Config) *predialer {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if tlsCfg != nil {
		tlsCfg = tlsCfg.Clone()
		if tlsCfg.ServerName == "" && net.ParseIP(u.Hostname()) == nil {
			tlsCfg.ServerName = u.Hostname()
		}
	}
	return &predialer{addr: net.JoinHostPort(u.Hostname(), port), tls: tlsCfg, results: make(chan dialResult, maxWarm)}
}

// dial opens one connection to the server, through its TLS handshake.
func (p *predialer) dial(ctx context.Context) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, "tcp", p.addr)
	if err != nil || p.tls == nil {
		return conn, err
	}
	tc := tls.Client(conn, p.tls)
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

func (p *predialer) start(n int) {
	p.mu.Lock()
	p.unclaimed += n
	p.mu.Unlock()
	for range n {
		go func() {
			conn, err := p.dial(context.Background())
			p.results <- dialResult{conn, err}
		}()
	}
}

// get is the transport's dial: a connection opened ahead if there is one
// to claim, else a new one. The address is always the server's.
func (p *predialer) get(ctx context.Context, _, _ string) (net.Conn, error) {
	p.mu.Lock()
	claim := p.unclaimed > 0
	if claim {
		p.unclaimed--
	}
	p.mu.Unlock()
	if claim {
		select {
		case r := <-p.results:
			if r.err == nil {
				return r.conn, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err() // the result stays for a later claim
		}
	}
	return p.dial(ctx)
}
