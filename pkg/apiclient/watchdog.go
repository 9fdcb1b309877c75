package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// Default waits of a request, for ClientConfig's zero values.
const (
	// defaultHeaderTimeout is how long the answer's headers may take once
	// the request is sent: the server answers an upload once it has the
	// file on disk, and a batch with the tree once it has hashed the tree.
	defaultHeaderTimeout = 60 * time.Second
	// defaultStallTimeout is how long a body, the request's or the
	// answer's, may move no byte: the server cuts off an upload that
	// stalls for as long (its BodyStall).
	defaultStallTimeout = 60 * time.Second
)

// watchdog cuts one attempt of a request off when it stops moving, so that
// no request waits forever on a server that accepts and never answers, or
// stops sending mid-body: the answer's headers must come within header of
// the attempt's start, or of the request's body being sent whole; a body,
// the request's as it is sent (a server that takes no more of an upload)
// and the answer's as it is read, must move at least once every stall. It
// cancels the attempt's context, and the attempt's error says which wait
// ran out. Every request of the client, an upload of sync as a download of
// pull, is watched so.
type watchdog struct {
	header, stall time.Duration
	cancel        context.CancelFunc

	mu      sync.Mutex
	timer   *time.Timer
	wait    time.Duration // the wait for the next movement
	waiting string        // what is awaited now, for the error
	fired   string        // what did not come, once it fired
	done    bool
}

// watch starts a watchdog over one attempt, which runs under the returned
// context; stop it once the attempt is over (its answer read or closed).
func watch(ctx context.Context, header, stall time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancel(ctx)
	noAnswer := fmt.Sprintf("no answer came within %s", header)
	w := &watchdog{header: header, stall: stall, cancel: cancel, wait: header, waiting: noAnswer}
	w.timer = time.AfterFunc(header, w.fire)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { w.expect(w.header, noAnswer) },
		GotFirstResponseByte: func() {
			w.expect(w.stall, fmt.Sprintf("the answer stalled: nothing came for %s", w.stall))
		},
	}), w
}

// watchedTransport is the transport under the client's requests: each
// round trip, one attempt of a request (resty makes one per attempt, and
// one per redirect), runs under a watchdog of its own, and ends with its
// body's finish, where it has one.
type watchedTransport struct {
	next          http.RoundTripper
	header, stall time.Duration
}

func (t *watchedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, w := watch(req.Context(), t.header, t.stall)
	attempt := req.WithContext(ctx)
	var finish func() error
	if b, ok := req.Body.(*finishingBody); ok {
		finish = b.finish
	}
	if req.Body != nil && req.Body != http.NoBody {
		attempt.Body = &watchedBody{r: req.Body, w: w}
		if reopen := req.GetBody; reopen != nil {
			attempt.GetBody = func() (io.ReadCloser, error) {
				r, err := reopen()
				if err != nil {
					return nil, err
				}
				return &watchedBody{r: r, w: w}, nil
			}
		}
	}
	resp, err := t.next.RoundTrip(attempt)
	if finish != nil {
		if ferr := finish(); ferr != nil {
			if err == nil {
				resp.Body.Close()
			}
			w.stop()
			return nil, ferr
		}
	}
	if err != nil {
		w.stop()
		if why := w.cutOff(); why != "" {
			return nil, &cutOffError{why}
		}
		return nil, err
	}
	resp.Body = &watchedBody{r: resp.Body, w: w, answer: true}
	return resp, nil
}

// cutOffError is an attempt the watchdog cut off: what did not come.
type cutOffError struct{ why string }

func (e *cutOffError) Error() string { return e.why }

// expect starts waiting for what, for at most d.
func (w *watchdog) expect(d time.Duration, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.fired != "" {
		return
	}
	w.wait, w.waiting = d, what
	w.timer.Reset(d)
}

// moved notes that a body moved: the wait for the next byte starts again.
// While the request's body is sent, that wait is stall.
func (w *watchdog) moved(sending bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.fired != "" {
		return
	}
	if sending && w.wait != w.stall {
		w.wait, w.waiting = w.stall, fmt.Sprintf("the server took no more of the request for %s", w.stall)
	}
	w.timer.Reset(w.wait)
}

func (w *watchdog) fire() {
	w.mu.Lock()
	if !w.done {
		w.fired = w.waiting
	}
	w.mu.Unlock()
	w.cancel()
}

// stop ends the watch and releases the attempt's context.
func (w *watchdog) stop() {
	w.mu.Lock()
	w.done = true
	w.timer.Stop()
	w.mu.Unlock()
	w.cancel()
}

// cutOff is what did not come when the watchdog cut the attempt off, or
// "" while it has not.
func (w *watchdog) cutOff() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

// watchedBody is a body, the request's or the answer's, under a watchdog:
// each byte read from it is movement; closing the answer's ends the watch.
type watchedBody struct {
	r      io.ReadCloser
	w      *watchdog
	answer bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.w.moved(!b.answer)
	}
	if err != nil && err != io.EOF {
		if why := b.w.cutOff(); why != "" {
			return n, errors.New(why)
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.r.Close()
	if b.answer {
		b.w.stop()
	}
	return err
}
