// Package apiclient is hoster's HTTP client of the contract in [api]: the
// Sync API (version, tree, upload, delete) and the tools API's listings and
// files, with the certificate pin, retries, waits and error classification.
// Every request goes one way (request.go): one function builds it as a
// resty request, and resty sends it, tries it again under the one retry
// policy (resty's retry count, condition, backoff and Retry-After, set up
// once in [NewClient]) and reads its answer (whole, within a bound, or
// left to stream where the caller reads it). Each attempt goes through
// one of the two transports (transport.go: the pin, HTTP/2 but for
// uploads, the connections [Client.Warm] opens ahead) under a watchdog of
// its own (watchdog.go: no answer, or a body that stalls, cuts it off).
// Batches are split and sent as tar streams in batch.go; errors.go
// classifies what went wrong. It is the one place hoster links an HTTP
// client library (resty); hoster-server never imports it.
//
// Upload bodies are streamed, never read into memory: resty v2 reads an
// io.Reader body whole before sending it, so resty builds each request
// without one, and its pre-request hook (withBody) opens the body afresh
// at each attempt and gives it to the request, with its length.
package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"sync"
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
	// jitter, up to 10 s (resty's backoff), and honours a 429's Retry-After
	// up to the same 10 s.
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
	// Wrap, when set, wraps each of the client's transports, under its
	// watchdog: tests put a transport there that holds or counts answers.
	Wrap func(http.RoundTripper) http.RoundTripper
}

// Client speaks the contract over HTTP.
type Client struct {
	r        *resty.Client // uploads: HTTP/1.1, a connection each
	small    *resty.Client // every other request: HTTP/2 where the server offers it
	attempts int           // see ClientConfig.Attempts
	base     time.Duration // see ClientConfig.RetryBase

	mu     sync.Mutex
	rtt    time.Duration // shortest request-to-answer time seen; 0: none yet
	warmed int           // connections opened ahead by Warm
	batch  bool          // the server offered the batch upload
	bounds batchBounds   // and bounded it so (0: no bound told)
	fetch  int           // the files of a batch download the server offered; 0: none
	pre    *predialer    // nil through a proxy
}

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
	cfg.defaults()
	c := &Client{attempts: cfg.Attempts, base: cfg.RetryBase}
	uploads, small, pre := transports(u, pin, cfg)
	c.pre = pre
	c.r = c.resty(cfg, uploads)
	c.small = c.resty(cfg, small)
	return c, nil
}

// defaults fills the zero values that mean a default.
func (cfg *ClientConfig) defaults() {
	if cfg.Attempts <= 0 {
		cfg.Attempts = 5
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 250 * time.Millisecond
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = defaultHeaderTimeout
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = defaultStallTimeout
	}
}

// Version asks the server's API version (the one route without a token),
// and notes whether the server offers the batch upload and the batch
// download, and their bounds.
func (c *Client) Version(ctx context.Context) (api.VersionInfo, error) {
	var v api.VersionInfo
	err := c.getJSON(ctx, "asking the server's API version", api.PathVersion, maxAnswer, &v)
	if err == nil {
		c.mu.Lock()
		c.batch = v.BatchUpload
		c.bounds = batchBounds{files: v.BatchMaxFiles, bytes: v.BatchMaxBytes, names: v.BatchMaxNameBytes}
		c.fetch = 0
		if v.BatchDownload {
			c.fetch = max(v.BatchDownloadMaxFiles, 1)
		}
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

// Tree fetches the server's tree of hashes.
func (c *Client) Tree(ctx context.Context) (api.Tree, error) {
	t := api.Tree{}
	err := c.getJSON(ctx, "fetching the server's tree", api.PathTree, maxAnswer, &t)
	return t, err
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
			return &Error{Op: op, Msg: "the server could not write it: " + res.Error, Reason: res.Cause}
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
			return &Error{Op: op, Msg: msg, Reason: res.Cause}
		}
		return nil
	})
}
