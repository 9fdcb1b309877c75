// Package apiclient is hoster's HTTP client of the contract in [api]: the
// Sync API (version, tree, upload, delete) and the tools API's listings and
// files, with the certificate pin, retries, waits and error classification.
// Every request goes one way: one function builds it as a resty request,
// sends it through the one transport (with the connections [Client.Warm]
// opens ahead) under one watchdog (no answer, or a body that stalls, cuts
// it off), classifies the answer and retries it under the one policy. It is
// the one place hoster links an HTTP client library (resty); hoster-server
// never imports it.
//
// Bodies are streamed, never read into memory: resty builds each request
// without one (given an io.Reader, resty v2 reads it whole to be able to
// send it again), and a pre-request hook gives the request its body, its
// length and the way to reopen it, carried in the request's context.
package apiclient

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/hoster-dev/hoster/pkg/api"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Server is the base URL, e.g. https://203.0.113.7 or http://127.0.0.1:8787.
	Server string
	// Token is the bearer token. It is sent in the Authorization header and
	// appears nowhere else: not in errors, not in logs.
	Token string
	// CertSHA256 pins the server certificate's SHA-256 fingerprint (hex, with
	// or without colons). With a pin, the certificate must match it and is
	// otherwise not verified: the pin is the stronger check. Without one the
	// certificate is verified against the system's roots (SSL_CERT_FILE and
	// SSL_CERT_DIR name others), by name or by IP alike, and a certificate
	// that does not verify fails the connection with an *UntrustedError
	// before anything, the token least of all, is sent.
	CertSHA256 string
	// InsecureSkipVerify, with no pin, accepts any certificate with a
	// warning: the token then goes to whichever server answers. Never the
	// default.
	InsecureSkipVerify bool
	// Warn receives warnings (verification turned off); may be nil.
	Warn func(string)
	// Conns is how many connections to keep alive (the transfer parallelism).
	Conns int
	// Attempts is how many times a transient failure is tried; 0 means 5.
	Attempts int
	// RetryBase is the first backoff; 0 means 250 ms. Backoff doubles, with
	// jitter, up to 10 s, and honours a 429's Retry-After.
	RetryBase time.Duration
	// HeaderTimeout is how long an answer's headers may take once the
	// request is sent; 0 means 60 s. An attempt that waits longer is cut
	// off, and tried again as one that got no answer.
	HeaderTimeout time.Duration
	// StallTimeout is how long a body, an upload's as it is sent or an
	// answer's as it is read, may move no byte; 0 means 60 s. A stalled
	// attempt is cut off: an upload is tried again, a download's body
	// read gives an error saying it stalled.
	StallTimeout time.Duration
}

// Client speaks the contract over HTTP.
type Client struct {
	r        *resty.Client // uploads: HTTP/1.1, a connection each
	small    *resty.Client // every other request: HTTP/2 where the server offers it
	attempts int
	base     time.Duration
	header   time.Duration // see ClientConfig.HeaderTimeout
	stall    time.Duration // see ClientConfig.StallTimeout

	mu     sync.Mutex
	rtt    time.Duration // shortest request-to-answer time seen; 0: none yet
	warmed int           // connections opened ahead by Warm
	batch  bool          // the server offered the batch upload
	bounds batchBounds   // and bounded it so (0: no bound told)
	pre    *predialer    // nil through a proxy
}

// Error is a failed request: what was being done, the HTTP status when
// there was an answer, and the server's message or the transport's error.
type Error struct {
	Op     string // e.g. "uploading example.com/arena/x.js"
	Status int    // 0 when no answer came
	Msg    string
	// Err, when set, is the cause (ErrNotFound, a *PinError, the context's
	// error); Msg is then empty.
	Err error
	// Transient is true for failures worth retrying: no answer, 5xx, 429.
	Transient bool
	// Attempts is how many times it was tried, when more than once.
	Attempts int
	retryAt  time.Duration
}

// Unreachable reports whether the failure says the server is not there to
// answer: no answer at all, or a server error (a 429 is an answer: slow
// down).
func (e *Error) Unreachable() bool { return e.Transient && e.Status != 429 }

func (e *Error) Error() string { return e.Op + ": " + e.Cause() }

// Cause is the error without the operation, for a caller that names the
// operation and its path itself.
func (e *Error) Cause() string {
	msg := e.Msg
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 && e.Err == nil {
		msg = fmt.Sprintf("server answered %d: %s", e.Status, msg)
	}
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Cause is err without the operation a client method put in front of it
// (see Error.Cause); any other error is returned whole.
func Cause(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Cause()
	}
	return err.Error()
}

// ErrNotFound is wrapped by errors for the contract's uniform 404, which a
// wrong token, an API that is off and an unknown API version all get.
var ErrNotFound = errors.New("the server answered 404 (the uniform 404 that hides the API): " +
	"the token may be wrong, the server may have no token file (API off), " +
	"or it may not serve this API version")

// PinError is the server certificate not matching the pinned fingerprint.
type PinError struct{ Got, Want string }

func (e *PinError) Error() string {
	return fmt.Sprintf("the server certificate's SHA-256 fingerprint is %s, but the pin (hoster-config-certSha256) is %s", e.Got, e.Want)
}

// UntrustedError is a server certificate that does not verify, with no pin
// set: nothing was sent to that server.
type UntrustedError struct {
	Host        string // the server's host name or IP
	Fingerprint string // the SHA-256 of the certificate it presented; "" if none
	Err         error  // why it does not verify
}

func (e *UntrustedError) Error() string {
	msg := fmt.Sprintf("refusing to send the token to %s: its certificate does not verify (%v), and no pin is set", e.Host, e.Err)
	if e.Fingerprint != "" {
		msg += fmt.Sprintf(". It presented a certificate with SHA-256 %s; if that is the fingerprint `hoster-server init` printed on the server (running init again there prints it again), pin it: hoster-config-certSha256 in hoster.json, HOSTER_CONFIG_CERTSHA256 or --cert-sha256", e.Fingerprint)
	} else {
		msg += ". Pin the fingerprint `hoster-server init` printed on the server: hoster-config-certSha256 in hoster.json, HOSTER_CONFIG_CERTSHA256 or --cert-sha256"
	}
	return msg + "; or trust the CA that issued it (SSL_CERT_FILE); --insecure-skip-verify turns verification off"
}

func (e *UntrustedError) Unwrap() error { return e.Err }

// NewClient makes a Client. The URL must be http or https.
func NewClient(cfg ClientConfig) (*Client, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("reading the server URL %q: want http(s)://host[:port]", cfg.Server)
	}
	pin, err := normalisePin(cfg.CertSHA256)
	if err != nil {
		return nil, err
	}
	// Two transports. Uploads go over HTTP/1.1, each on its own TCP
	// connection and window: behind Caddy, Go's HTTP/2 server gives a
	// connection a 1 MiB receive window, so many streams on one connection
	// are held to 1 MiB a round trip (bench/link.sh: 19.5 s against 3.0 s at
	// 50 ms). Every other request (the version, the tree, deletes, pulls)
	// is small or a download, and where a TLS server offers HTTP/2 it goes
	// over one HTTP/2 connection: no handshake of its own, and a download is
	// not held by the server's window but by this client's, which is large.
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
	small := tr.Clone()
	small.ForceAttemptHTTP2 = true // with our own TLS config, HTTP/2 must be asked for
	tr.TLSClientConfig = tlsCfg.Clone()
	if tlsCfg != nil {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	// Connections opened ahead (Warm) are handed to the upload transport
	// as it asks for them; through a proxy from the environment there are
	// none.
	var pre *predialer
	if proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err == nil && proxy == nil {
		pre = newPredialer(u, tr.TLSClientConfig)
		if tlsCfg != nil {
			tr.DialTLSContext = pre.get
		} else {
			tr.DialContext = pre.get
		}
	}
	restyFor := func(tr *http.Transport) *resty.Client {
		r := resty.New().
			SetBaseURL(strings.TrimRight(cfg.Server, "/")).
			SetTransport(tr).
			SetLogger(quietLogger{}).
			SetRetryCount(0).
			SetDoNotParseResponse(true). // do reads each answer itself, or leaves it to Fetch's caller
			SetPreRequestHook(withBody)
		if cfg.Token != "" {
			r.SetAuthToken(cfg.Token)
		}
		return r
	}
	r := restyFor(tr)
	c := &Client{r: r, small: restyFor(small), attempts: cfg.Attempts, base: cfg.RetryBase, pre: pre}
	if c.attempts <= 0 {
		c.attempts = 5
	}
	if c.base <= 0 {
		c.base = 250 * time.Millisecond
	}
	c.header, c.stall = cfg.HeaderTimeout, cfg.StallTimeout
	if c.header <= 0 {
		c.header = defaultHeaderTimeout
	}
	if c.stall <= 0 {
		c.stall = defaultStallTimeout
	}
	return c, nil
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

// Version asks the server's API version (the one route without a token),
// and notes whether the server offers the batch upload, and its bounds.
func (c *Client) Version(ctx context.Context) (api.VersionInfo, error) {
	var v api.VersionInfo
	err := c.getJSON(ctx, "asking the server's API version", api.PathVersion, maxAnswer, &v)
	if err == nil {
		c.mu.Lock()
		c.batch = v.BatchUpload
		c.bounds = batchBounds{files: v.BatchMaxFiles, bytes: v.BatchMaxBytes, names: v.BatchMaxNameBytes}
		c.mu.Unlock()
	}
	return v, err
}

// CanBatch reports whether the server offered the batch upload (PutFiles)
// when Version was last asked.
func (c *Client) CanBatch() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batch
}

// putBatch uploads files in one request, the batch upload extension
// (PathFiles). The body is a tar stream made as it is sent, each file read
// from Open, with its length told up front; a retried batch is sent again
// whole. It returns one outcome per file (written, exactly Size bytes, with
// the hash the server reports; or why not), or an error for the whole
// batch when the request itself failed. With tree set it asks for the
// server's tree as it stands after the batch, and returns it where the
// server sent it (nil where not).
func (c *Client) putBatch(ctx context.Context, files []api.BatchFile, tree bool) ([]api.BatchOutcome, api.Tree, error) {
	op := fmt.Sprintf("uploading %d files at once", len(files))
	out := make([]api.BatchOutcome, len(files))
	size, err := tarSize(files)
	if err != nil {
		return nil, nil, &Error{Op: op, Msg: err.Error()}
	}
	var after api.Tree
	tarBody := func() (body, error) {
		pr, pw := io.Pipe()
		wrote := make(chan error, 1)
		go func() {
			err := writeTar(pw, files)
			pw.CloseWithError(err)
			wrote <- err
		}()
		return body{r: pr, size: size, done: func() error {
			pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the answer came early
			var le *localError
			if errors.As(<-wrote, &le) {
				return &Error{Op: op, Msg: le.Error()} // not the link's fault: not retried
			}
			return nil
		}}, nil
	}
	k := call{op: op, method: http.MethodPut, path: api.PathFiles, contentType: "application/x-tar", open: tarBody, upload: true}
	if tree {
		k.query = url.Values{api.QueryTree: {"1"}}
	}
	err = c.do(ctx, k, func(_ *http.Response, answer []byte) error {
		var res api.BatchResult
		var fail api.WriteResult // variant 2's answer to a request that failed as a whole
		if json.Unmarshal(answer, &fail) == nil && fail.OK != nil && !*fail.OK {
			return &Error{Op: op, Msg: "the server could not write them: " + fail.Error}
		}
		if err := json.Unmarshal(answer, &res); err != nil || len(res.Files) != len(files) {
			return &Error{Op: op, Msg: fmt.Sprintf("the answer is not a result for each of the %d files", len(files))}
		}
		for i, r := range res.Files {
			o := api.BatchOutcome{SHA256: r.SHA256}
			switch {
			case r.Path != files[i].Rel:
				o = api.BatchOutcome{Err: &Error{Op: "uploading " + files[i].Rel, Msg: "the server answered for " + r.Path}}
			case r.Error != "":
				o = api.BatchOutcome{Err: &Error{Op: "uploading " + files[i].Rel, Msg: "the server could not write it: " + r.Error}}
			case r.Size != files[i].Size:
				o = api.BatchOutcome{Err: &Error{Op: "uploading " + files[i].Rel, Msg: fmt.Sprintf("the server wrote %d bytes of %d", r.Size, files[i].Size)}}
			}
			out[i] = o
		}
		if res.Tree != nil {
			after = *res.Tree
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, after, nil
}

// localError is a failure to read a local file into a batch: not the
// link's fault, so not retried.
type localError struct {
	rel string
	err error
}

func (e *localError) Error() string {
	return fmt.Sprintf("reading the local file %s: %v", e.rel, e.err)
}

// tarHeader is the header of f in a batch's tar stream.
func tarHeader(f api.BatchFile) *tar.Header {
	return &tar.Header{Name: f.Rel, Size: f.Size, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
}

// tarSize is the length of the tar stream writeTar makes of files: each
// file's header blocks (as the tar writer writes them), its bytes padded to
// a block, and the two zero blocks that end the stream. Sent as the
// request's Content-Length, it spares both hops (to the proxy, and on to
// the server) the chunked encoding.
func tarSize(files []api.BatchFile) (int64, error) {
	var total int64
	for _, f := range files {
		n, err := tarEntrySize(f)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total + tarEnd, nil
}

// tarEnd is the length of the two zero blocks that end a tar stream.
const tarEnd = 2 * 512

// tarEntrySize is the length of f in a tar stream: its header blocks and
// its bytes padded to a block.
func tarEntrySize(f api.BatchFile) (int64, error) {
	const block = 512
	var n countingWriter
	if err := tar.NewWriter(&n).WriteHeader(tarHeader(f)); err != nil {
		return 0, fmt.Errorf("%s cannot be sent in a batch: %w", f.Rel, err)
	}
	return int64(n) + (f.Size+block-1)/block*block, nil
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// writeTar writes files to w as a tar stream, in pieces of tarChunk: the
// tar writer's own writes (a header, a file's padding) are small, and each
// write is a TLS record and a system call on every hop.
func writeTar(w io.Writer, files []api.BatchFile) error {
	bw := bufio.NewWriterSize(w, tarChunk)
	tw := tar.NewWriter(bw)
	for _, f := range files {
		if err := tw.WriteHeader(tarHeader(f)); err != nil {
			return err
		}
		body, err := f.Open()
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return &localError{f.Rel, err}
		}
		n, err := io.Copy(tw, io.LimitReader(body, f.Size))
		body.Close()
		if err == nil && n != f.Size {
			err = fmt.Errorf("it has %d bytes, not the %d it had when the sync began", n, f.Size)
		}
		if err != nil {
			if errors.Is(err, io.ErrClosedPipe) {
				return err
			}
			return &localError{f.Rel, err}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// tarChunk is the size of the pieces writeTar writes: four full TLS records.
const tarChunk = 64 << 10

// Tree fetches the server's tree of hashes.
func (c *Client) Tree(ctx context.Context) (api.Tree, error) {
	t := api.Tree{}
	err := c.getJSON(ctx, "fetching the server's tree", api.PathTree, maxAnswer, &t)
	return t, err
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

// getJSON gets path's JSON answer, of at most limit bytes, into v.
func (c *Client) getJSON(ctx context.Context, op, path string, limit int64, v any) error {
	k := call{op: op, method: http.MethodGet, path: path, limit: limit, timed: path == api.PathVersion}
	return c.do(ctx, k, func(_ *http.Response, answer []byte) error {
		if err := json.Unmarshal(answer, v); err != nil {
			return &Error{Op: op, Msg: "the answer is not the expected JSON: " + err.Error()}
		}
		return nil
	})
}

// PutFile uploads a file to rel. open is called for every attempt, so a
// retried upload sends the whole file again. A variant 2 answer of
// {ok:false} is an error. The body is streamed from the file with its
// Content-Length, never read into memory.
func (c *Client) PutFile(ctx context.Context, rel string, size int64, open func() (io.ReadCloser, error)) (api.WriteResult, error) {
	op := "uploading " + rel
	var res api.WriteResult
	file := func() (body, error) {
		r, err := open()
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is the caller's; the cause is what matters
			}
			return body{}, &Error{Op: op, Msg: "reading the local file: " + err.Error()}
		}
		return body{r: r, size: size, reopen: open}, nil
	}
	k := call{op: op, method: http.MethodPut, path: api.PathFile, query: url.Values{api.QueryPath: {rel}},
		contentType: "application/octet-stream", open: file, upload: true}
	err := c.do(ctx, k, func(_ *http.Response, answer []byte) error {
		res = api.WriteResult{}
		if err := json.Unmarshal(answer, &res); err != nil {
			return &Error{Op: op, Msg: "the answer is not a write result: " + err.Error()}
		}
		if res.OK != nil && !*res.OK {
			return &Error{Op: op, Msg: "the server could not write it: " + res.Error}
		}
		if res.Size != size {
			return &Error{Op: op, Msg: fmt.Sprintf("the server wrote %d bytes of %d", res.Size, size)}
		}
		return nil
	})
	return res, err
}

// DeleteFile deletes the file or subtree at rel; an absent path is success.
func (c *Client) DeleteFile(ctx context.Context, rel string) error {
	op := "deleting " + rel
	k := call{op: op, method: http.MethodDelete, path: api.PathFile, query: url.Values{api.QueryPath: {rel}}}
	return c.do(ctx, k, func(_ *http.Response, answer []byte) error {
		var res api.DeleteResult
		if err := json.Unmarshal(answer, &res); err != nil {
			return &Error{Op: op, Msg: "the answer is not a delete result: " + err.Error()}
		}
		if (res.Deleted == nil || !*res.Deleted) && (res.OK == nil || !*res.OK) {
			msg := "the server did not delete it"
			if res.Error != "" {
				msg += ": " + res.Error
			}
			return &Error{Op: op, Msg: msg}
		}
		return nil
	})
}

// call is one request of the contract.
type call struct {
	op          string // what is being done, for errors: "uploading example.com/arena/x.js"
	method      string
	path        string // a route of api
	query       url.Values
	header      http.Header // more headers (Range)
	contentType string
	// open, when set, gives the body afresh for each attempt; its error is
	// the attempt's, not retried.
	open func() (body, error)
	// stream leaves the body of a 200 or 206 answer unread, for the caller
	// to read and close.
	stream bool
	// limit bounds an answer read whole (not k.stream's); 0 means maxAnswer.
	limit  int64
	timed  bool // keeps the round trip (RTT)
	upload bool // goes over HTTP/1.1, on a connection of its own
}

// body is one attempt's request body.
type body struct {
	r    io.ReadCloser
	size int64 // -1: not known, sent chunked
	// reopen, when set, opens the body again for the transport (a redirect).
	reopen func() (io.ReadCloser, error)
	// done, when set, runs once the answer came (or none will); its error,
	// a local failure, is the attempt's, not retried.
	done func() error
}

// maxAnswer bounds an answer read into memory, unless its call sets a
// bound of its own: a longer answer is refused.
const maxAnswer = 256 << 20

// do is the one way a request goes: it builds k as a resty request (the
// body attached by withBody), sends it through the client's transport, and
// hands a 200 answer (a 206 too where k.stream) to
// read, with the answer's body read whole unless k.stream. Any other answer
// and no answer are an *Error, tried again under the one retry policy when
// transient (no answer, 5xx, 429); read's own errors are final.
func (c *Client) do(ctx context.Context, k call, read func(resp *http.Response, answer []byte) error) error {
	return c.retry(ctx, k.op, func() error {
		resp, err := c.send(ctx, k)
		if err != nil {
			return err
		}
		if k.stream && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent) {
			return read(resp, nil)
		}
		defer resp.Body.Close()
		limit := k.limit
		if limit <= 0 {
			limit = maxAnswer
		}
		answer, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return transportError(k.op, err)
		}
		if int64(len(answer)) > limit {
			return &Error{Op: k.op, Status: resp.StatusCode, Err: fmt.Errorf("the answer is over %d MiB, more than any answer to this request should be; refused", limit>>20)}
		}
		if err := statusError(k.op, resp.StatusCode, resp.Header, answer); err != nil {
			return err
		}
		return read(resp, answer)
	})
}

// send makes one attempt of k, under a watchdog (see watchdog): the
// answer, whose body's Close ends the watch, or an *Error.
func (c *Client) send(ctx context.Context, k call) (*http.Response, error) {
	var b body
	if k.open != nil {
		var err error
		if b, err = k.open(); err != nil {
			return nil, err
		}
	}
	if k.timed {
		ctx = c.timed(ctx)
	}
	ctx, w := c.watch(ctx)
	rc := c.small
	if k.upload {
		rc = c.r
	}
	req := rc.R().SetQueryParamsFromValues(k.query).SetHeaderMultiValues(k.header)
	if k.contentType != "" {
		req.SetHeader("Content-Type", k.contentType)
	}
	if b.r != nil && b.size == 0 {
		b.r.Close() // nothing to send: no body, and a Content-Length of 0
	} else if b.r != nil {
		w.watchBody(&b)
		ctx = context.WithValue(ctx, bodyKey{}, &b) // for withBody: resty never sees it
	}
	resp, err := req.SetContext(ctx).Execute(k.method, k.path)
	if b.done != nil {
		if derr := b.done(); derr != nil {
			if err == nil {
				resp.RawBody().Close()
			}
			w.stop()
			return nil, derr
		}
	}
	if err != nil {
		w.stop()
		if why := w.cutOff(); why != "" {
			return nil, &Error{Op: k.op, Msg: why, Transient: true}
		}
		return nil, transportError(k.op, err)
	}
	raw := resp.RawResponse
	raw.Body = &watchedBody{r: raw.Body, w: w, answer: true}
	return raw, nil
}

// bodyKey carries a request's *body in its context, for withBody.
type bodyKey struct{}

// withBody is the resty client's pre-request hook: it gives the request
// built by resty its body, with its length (-1: not known, sent chunked)
// and the way to open it again. resty is never given a body: it would read
// any io.Reader body whole into memory, to make its GetBody (v2's
// getBodyCopy) and to learn the length, where an upload must stream.
func withBody(_ *resty.Client, req *http.Request) error {
	if b, ok := req.Context().Value(bodyKey{}).(*body); ok {
		req.Body = b.r
		req.ContentLength = b.size
		req.GetBody = b.reopen // nil: it cannot be sent again
	}
	return nil
}

// transportError classifies a request that got no answer.
func transportError(op string, err error) error {
	var pe *PinError
	if errors.As(err, &pe) {
		return &Error{Op: op, Err: pe}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Op: op, Err: err}
	}
	var uerr *url.Error
	host := "the server"
	if errors.As(err, &uerr) {
		if u, perr := url.Parse(uerr.URL); perr == nil && u.Host != "" {
			host = u.Host
		}
		err = uerr.Err // the URL is ours; the cause is what matters
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		ue := &UntrustedError{Host: host, Err: certErr.Err}
		if len(certErr.UnverifiedCertificates) > 0 {
			ue.Fingerprint = Fingerprint(certErr.UnverifiedCertificates[0].Raw)
		}
		return &Error{Op: op, Err: ue}
	}
	return &Error{Op: op, Msg: err.Error(), Transient: true}
}

// statusError turns a non-200 answer into an error; 200 is nil.
func statusError(op string, status int, header http.Header, body []byte) error {
	if status == http.StatusOK {
		return nil
	}
	if status == http.StatusNotFound {
		return &Error{Op: op, Err: ErrNotFound}
	}
	e := &Error{Op: op, Status: status, Msg: serverMessage(body),
		Transient: status >= 500 || status == http.StatusTooManyRequests}
	if status == http.StatusTooManyRequests {
		if secs, err := strconv.Atoi(header.Get("Retry-After")); err == nil && secs >= 0 {
			e.retryAt = time.Duration(secs) * time.Second
		}
	}
	return e
}

// serverMessage reads {error} from a body, or a short excerpt of it.
func serverMessage(body []byte) string {
	var e api.ErrorBody
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(no message)"
	}
	return s
}

// retry runs try until it succeeds, fails for good, or the attempts are
// spent, sleeping a jittered, doubling backoff between transient failures.
func (c *Client) retry(ctx context.Context, op string, try func() error) error {
	wait := c.base
	for attempt := 1; ; attempt++ {
		err := try()
		var e *Error
		if err == nil || !errors.As(err, &e) || !e.Transient || attempt >= c.attempts {
			if err != nil && attempt > 1 && e != nil && e.Transient {
				e.Attempts = attempt
			}
			return err
		}
		sleep := wait/2 + rand.N(wait/2+1)
		if e.retryAt > sleep {
			sleep = e.retryAt
		}
		select {
		case <-ctx.Done():
			return &Error{Op: op, Err: ctx.Err()}
		case <-time.After(sleep):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

// quietLogger keeps resty from printing anything of its own.
type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}
