package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/hoster-dev/hoster/pkg/api"
)

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

// finishingBody is a request body with work to finish once its attempt
// is over (body.done): the watched transport runs it.
type finishingBody struct {
	io.ReadCloser
	finish func() error
}

// maxAnswer bounds an answer read into memory, unless its call sets a
// bound of its own: a longer answer is refused.
const maxAnswer = 256 << 20

// maxBackoff bounds the wait between two attempts, a 429's Retry-After
// included.
const maxBackoff = 10 * time.Second

// resty makes the resty client of one of the transports: the server's
// URL and token, and the one retry policy of every request. A request is
// tried again, up to Attempts in all, when it got no answer, or a 5xx or
// a 429 (retryable); the wait between attempts is resty's backoff, from
// RetryBase doubling up to 10 s with jitter, or what a 429's Retry-After
// asks (retryAfter), up to the same 10 s.
func (c *Client) resty(cfg ClientConfig, tr http.RoundTripper) *resty.Client {
	r := resty.New().
		SetBaseURL(strings.TrimRight(cfg.Server, "/")).
		SetTransport(tr).
		SetLogger(quietLogger{}).
		SetRetryCount(cfg.Attempts - 1).
		SetRetryWaitTime(cfg.RetryBase).
		SetRetryMaxWaitTime(maxBackoff).
		AddRetryCondition(retryable).
		SetRetryAfter(retryAfter).
		AddRetryHook(c.discard).
		SetPreRequestHook(withBody)
	if cfg.Token != "" {
		r.SetAuthToken(cfg.Token)
	}
	return r
}

// do is the one way a request goes: it builds k as a resty request, which
// resty sends through the client's transport (each attempt under its
// watchdog, with its body attached by withBody) and tries again under the
// one retry policy, and hands a 200 answer (a 206 too where k.stream) to
// read, with the answer's body read whole by resty unless k.stream. Any
// other answer and no answer are an *Error; read's own errors are final.
func (c *Client) do(ctx context.Context, k call, read func(resp *http.Response, answer []byte) error) error {
	if k.timed {
		ctx = c.timed(ctx)
	}
	if k.open != nil {
		ctx = context.WithValue(ctx, bodyKey{}, k.open) // for withBody, at each attempt
	}
	rc := c.small
	if k.upload {
		rc = c.r
	}
	limit := k.limit
	if limit <= 0 {
		limit = maxAnswer
	}
	req := rc.R().SetContext(ctx).SetQueryParamsFromValues(k.query).SetHeaderMultiValues(k.header).
		SetDoNotParseResponse(k.stream).SetResponseBodyLimit(int(limit))
	if k.contentType != "" {
		req.SetHeader("Content-Type", k.contentType)
	}
	resp, err := req.Execute(k.method, k.path)
	if err != nil {
		err = failure(k, resp, limit, err)
	} else {
		err = answerError(k, resp, limit)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Transient && req.Attempt > 1 {
			e.Attempts = req.Attempt
		}
		return err
	}
	return read(resp.RawResponse, resp.Body())
}

// answerError is the error of an answer, or of a request that got none;
// nil for an answer to hand on (a 200, a 206 where k.stream).
func answerError(k call, resp *resty.Response, limit int64) error {
	status := resp.StatusCode()
	if k.stream && (status == http.StatusOK || status == http.StatusPartialContent) {
		return nil
	}
	answer := resp.Body()
	if k.stream { // an error's answer, unread
		defer resp.RawBody().Close()
		var err error
		if answer, err = io.ReadAll(io.LimitReader(resp.RawBody(), limit)); err != nil {
			return transportError(k.op, err)
		}
	}
	return statusError(k.op, status, resp.Header(), answer)
}

// failure is the error of an attempt that got no answer, or an answer
// too long to read.
func failure(k call, resp *resty.Response, limit int64, err error) error {
	if resp != nil && resp.RawResponse != nil && k.stream {
		resp.RawBody().Close()
	}
	if errors.Is(err, resty.ErrResponseBodyTooLarge) {
		return &Error{Op: k.op, Status: resp.StatusCode(), Err: fmt.Errorf("the answer is over %d MiB, more than any answer to this request should be; refused", limit>>20)}
	}
	return transportError(k.op, err)
}

// retryable is the retry condition: an attempt that got no answer, or a
// transient one (5xx, 429), is tried again.
func retryable(resp *resty.Response, err error) bool {
	if err != nil {
		if errors.Is(err, resty.ErrResponseBodyTooLarge) {
			return false
		}
		var e *Error
		return errors.As(transportError("", err), &e) && e.Transient
	}
	return transientStatus(resp.StatusCode())
}

// retryAfter is the wait a 429 asks for in its Retry-After, in seconds;
// 0 leaves the wait to the backoff.
func retryAfter(_ *resty.Client, resp *resty.Response) (time.Duration, error) {
	if resp.StatusCode() != http.StatusTooManyRequests {
		return 0, nil
	}
	if secs, err := strconv.Atoi(resp.Header().Get("Retry-After")); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second, nil
	}
	return 0, nil
}

// discard closes the answer of an attempt that is tried again, where resty
// left it unread (a streamed request's): its connection is then free for
// the next. The last attempt's answer is the caller's.
func (c *Client) discard(resp *resty.Response, _ error) {
	if resp != nil && resp.RawResponse != nil && resp.Request.Attempt < c.attempts {
		resp.RawBody().Close()
	}
}

// bodyKey carries a request's body opener (call.open) in its context, for
// withBody.
type bodyKey struct{}

// withBody is the resty client's pre-request hook, run at each attempt: it
// opens the request's body afresh and gives it to the request resty built,
// with its length (-1: not known, sent chunked) and the way to open it
// again. resty is never given the body, and the hook, which sees only the
// request resty built, finds it in the request's context: given an
// io.Reader that is not a bytes or strings reader, resty v2 reads it whole
// into memory before sending, to make the request's GetBody
// (createHTTPRequest's getBodyCopy), where an upload must stream
// (TestPutFileStreams). Measured: a 64 MiB upload given to resty's
// SetBody as an io.Reader allocated 158 MiB, and sent nothing until the
// file was read; given through this hook, 163 KiB.
func withBody(_ *resty.Client, req *http.Request) error {
	open, ok := req.Context().Value(bodyKey{}).(func() (body, error))
	if !ok {
		return nil
	}
	b, err := open()
	if err != nil {
		return err
	}
	if b.size == 0 {
		b.r.Close() // nothing to send: no body, and a Content-Length of 0
		return nil
	}
	req.Body = b.r
	if b.done != nil {
		req.Body = &finishingBody{ReadCloser: b.r, finish: b.done}
	}
	req.ContentLength = b.size
	req.GetBody = b.reopen // nil: it cannot be sent again
	return nil
}

// quietLogger keeps resty from printing anything of its own.
type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}
