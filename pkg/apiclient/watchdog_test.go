package apiclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

// hangingServer answers with h, which may wait on release: it is closed
// before the server, so no handler outlives the test.
func hangingServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, release <-chan struct{})) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, release) }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv
}

// shortWait is a client whose header or stall wait is short, so that a
// test that needs it to run out is quick (the servers below never move
// again, so how short does not matter); the other wait is long, so that it
// never runs out first.
func shortWait(t *testing.T, url string, header, stall time.Duration) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{Server: url, Token: secret, Attempts: 1, HeaderTimeout: header, StallTimeout: stall})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A server that accepts the request and never answers: the attempt is cut
// off after the header wait, as one that got no answer.
func TestNoAnswerIsCutOff(t *testing.T) {
	srv := hangingServer(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) { <-release })
	_, err := shortWait(t, srv.URL, 20*time.Millisecond, time.Hour).Logs(context.Background())
	var e *Error
	if !errors.As(err, &e) || !e.Unreachable() || !strings.Contains(err.Error(), "no answer came within 20ms") {
		t.Fatalf("listing from a server that never answers: %v", err)
	}
}

// A download whose body stops mid-way: reading it fails, saying so.
func TestStalledDownloadIsCutOff(t *testing.T) {
	srv := hangingServer(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "first bytes")
		w.(http.Flusher).Flush()
		<-release
	})
	f, err := shortWait(t, srv.URL, time.Hour, 20*time.Millisecond).Fetch(context.Background(), api.PathLogsFile, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Body.Close()
	if _, err := io.ReadAll(f.Body); err == nil || !strings.Contains(err.Error(), "the answer stalled: nothing came for 20ms") {
		t.Fatalf("reading a stalled body: %v", err)
	}
}

// An upload the server takes no more of: cut off, not stuck.
func TestStalledUploadIsCutOff(t *testing.T) {
	srv := hangingServer(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) { <-release })
	const size = 1 << 30 // more than any socket buffers hold: the writes block
	_, err := shortWait(t, srv.URL, time.Hour, 20*time.Millisecond).PutFile(context.Background(), "a.com/g/big.bin", size, func() (io.ReadCloser, error) {
		return io.NopCloser(io.LimitReader(zeros{}, size)), nil
	})
	if err == nil || !strings.Contains(err.Error(), "the server took no more of the request for 20ms") {
		t.Fatalf("an upload the server does not read: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// A listing longer than maxListing is refused, without reading it all.
func TestListingBound(t *testing.T) {
	var sent int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"files":[`)
		entries := strings.Repeat(`{"path":"a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl","size":1},`, 10000)
		for sent < 2*maxListing {
			n, err := io.WriteString(w, entries)
			sent += int64(n)
			if err != nil {
				return
			}
		}
		io.WriteString(w, `{"path":"x","size":1}]}`)
	}))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{Server: srv.URL, Token: secret, Attempts: 1})
	_, err := c.GameLogs(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listing the game logs: the answer is over 64 MiB") {
		t.Fatalf("a listing over the bound: %v", err)
	}
}
