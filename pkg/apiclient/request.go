package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
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
