// Package accesslog writes {logs_root}/web-logs/access.log the way Caddy
// does, for a hoster-server running without Caddy in front: one JSON line per
// request with Caddy's field names and nesting (level, ts, logger, msg,
// request{remote_ip, remote_port, proto, method, host, uri, headers, tls},
// bytes_read, user_id, duration, size, status, resp_headers), credentials
// redacted as Caddy redacts them, rolled by size with lumberjack using the
// contract's settings (64 MiB, 50 files, 2160 hours, uncompressed), so the
// rotated files are access-<time>.log beside it, as Caddy's are.
//
// Unlike Caddy, which logs what it is sent, each line is bounded: the uri,
// the host and every header value are cut to [MaxField] bytes (ending in
// "…" when cut), and at most [MaxHeaders] headers of 8 values each are kept, so
// that a 1 MB query string costs a line of a few KiB, not 1 MB.
package accesslog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/clientip"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Log is an access log.
type Log struct {
	mu  sync.Mutex
	out *lumberjack.Logger
	log *slog.Logger
}

// New opens the access log under logsRoot.
func New(logsRoot string, logger *slog.Logger) (*Log, error) {
	dir := filepath.Join(logsRoot, api.WebLogsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Log{log: logger, out: &lumberjack.Logger{
		Filename:   filepath.Join(dir, api.AccessLogName),
		MaxSize:    api.AccessLogRollSizeMiB,
		MaxBackups: api.AccessLogRollKeep,
		MaxAge:     api.AccessLogRollKeepForH / 24,
		Compress:   false,
		LocalTime:  false,
	}}, nil
}

// Close closes the file.
func (l *Log) Close() error { return l.out.Close() }

// The bounds of one line.
const (
	// MaxField is the most bytes a logged uri, host or header value keeps.
	MaxField = 2048
	// MaxHeaders is the most request or response headers a line keeps.
	MaxHeaders = 64
)

// clip cuts s to MaxField bytes, on a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= MaxField {
		return s
	}
	cut := MaxField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// clipHeaders copies h with credentials redacted and every value clipped,
// keeping at most MaxHeaders names (the first in sorted order).
func clipHeaders(h http.Header) http.Header {
	out := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if len(out) == MaxHeaders {
			break
		}
		v := h[k]
		if redacted[k] {
			out[k] = []string{"REDACTED"}
			continue
		}
		vs := make([]string, 0, min(len(v), 8))
		for _, x := range v[:min(len(v), 8)] {
			vs = append(vs, clip(x))
		}
		out[clip(k)] = vs
	}
	return out
}

// redacted are the headers Caddy logs as REDACTED by default.
var redacted = map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true}

// line is one access line, in Caddy's shape.
type line struct {
	Level       string      `json:"level"`
	TS          float64     `json:"ts"`
	Logger      string      `json:"logger"`
	Msg         string      `json:"msg"`
	Request     request     `json:"request"`
	BytesRead   int64       `json:"bytes_read"`
	UserID      string      `json:"user_id"`
	Duration    float64     `json:"duration"`
	Size        int64       `json:"size"`
	Status      int         `json:"status"`
	RespHeaders http.Header `json:"resp_headers"`
}

type request struct {
	RemoteIP   string      `json:"remote_ip"`
	RemotePort string      `json:"remote_port"`
	ClientIP   string      `json:"client_ip"`
	Proto      string      `json:"proto"`
	Method     string      `json:"method"`
	Host       string      `json:"host"`
	URI        string      `json:"uri"`
	Headers    http.Header `json:"headers"`
	TLS        *tlsInfo    `json:"tls,omitempty"`
}

type tlsInfo struct {
	Resumed     bool   `json:"resumed"`
	Version     uint16 `json:"version"`
	CipherSuite uint16 `json:"cipher_suite"`
	Proto       string `json:"proto"`
	ServerName  string `json:"server_name"`
}

// Middleware logs every request that passes through next: when its
// handler returns, or later for one the handler held (Hold).
func (l *Log) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		body := &countingBody{ReadCloser: r.Body}
		if r.Body != nil {
			r.Body = body
		}
		p := &pending{}
		p.left.Store(1)
		p.write = func() { l.write(r, rec, body.n, start) }
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), pendingKey{}, p)))
		p.finish()
	})
}

// pending is a request's line, written once its handler returned and
// every hold on it was released.
type pending struct {
	left  atomic.Int32
	write func()
}

type pendingKey struct{}

func (p *pending) finish() {
	if p.left.Add(-1) == 0 {
		p.write()
	}
}

// Hold keeps r's line from being written when its handler returns, until
// the function it returns is called (once; later calls do nothing): for a
// request whose connection lives on past its handler, a socket handed to
// another process, whose line says how long it lasted. A request the
// middleware did not see gets a function that does nothing.
func Hold(r *http.Request) (release func()) {
	p, ok := r.Context().Value(pendingKey{}).(*pending)
	if !ok {
		return func() {}
	}
	p.left.Add(1)
	var once sync.Once
	return func() { once.Do(p.finish) }
}

func (l *Log) write(r *http.Request, rec *recorder, read int64, start time.Time) {
	ip, port, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	client := ip
	if a := clientip.Of(r); a.IsValid() {
		client = a.String()
	}
	headers, resp := clipHeaders(r.Header), clipHeaders(rec.Header())
	ln := line{
		Level: "info", TS: float64(start.UnixNano()) / 1e9, Logger: "http.log.access", Msg: "handled request",
		Request: request{RemoteIP: ip, RemotePort: port, ClientIP: client, Proto: r.Proto, Method: r.Method,
			Host: clip(r.Host), URI: clip(r.RequestURI), Headers: headers},
		BytesRead: read, Duration: time.Since(start).Seconds(), Size: rec.size, Status: rec.status, RespHeaders: resp,
	}
	if r.TLS != nil {
		ln.Request.TLS = &tlsInfo{Resumed: r.TLS.DidResume, Version: r.TLS.Version, CipherSuite: r.TLS.CipherSuite,
			Proto: r.TLS.NegotiatedProtocol, ServerName: r.TLS.ServerName}
	}
	b, err := json.Marshal(ln)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// One write per line: lumberjack rolls between writes, never inside one.
	if _, err := l.out.Write(append(b, '\n')); err != nil {
		l.log.Warn("writing the access log", "err", err)
	}
}

// recorder notes the status and size of a response. It passes hijacking
// (WebSocket upgrades) and flushing through.
type recorder struct {
	http.ResponseWriter
	status      int
	size        int64
	wroteHeader bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	n, err := r.ResponseWriter.Write(b)
	r.size += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be hijacked")
	}
	r.status = http.StatusSwitchingProtocols
	return h.Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

type countingBody struct {
	ReadCloser interface {
		Read([]byte) (int, error)
		Close() error
	}
	n int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingBody) Close() error { return c.ReadCloser.Close() }
