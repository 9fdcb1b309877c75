package apiclient_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
	"github.com/hoster-dev/hoster/pkg/tools"
	"github.com/hoster-dev/hoster/pkg/transfer"
)

// The tests of this file run the client against the real server, from
// contracttest; those of the package's own files, against servers that
// answer what a test needs, as no real one would.

// secret is the token of the harness's server.
const secret = contracttest.Token

// TestPutFilesFitsTheOffer: against hoster-server, PutFiles reads the
// batch's bounds from /api/version and splits what does not fit into as
// many batches as it takes, in order, the tree asked for in the last one;
// against a server that offers the batch but tells no bounds (one from
// before them), the same files go in one batch.
func TestPutFilesFitsTheOffer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bounded bool
		batches int
	}{{"bounds offered", true, 3}, {"no bounds told", false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			// An upload limit of 1 MiB makes a batch bound of 2 MiB; the
			// server that tells none has the default, 1 GiB.
			limit := int64(1 << 20)
			if !tc.bounded {
				limit = 0
			}
			var mu sync.Mutex
			var batches []string // the query of each batch request
			c := contracttest.Start(t, contracttest.Options{MaxUpload: limit, Client: apiclient.ClientConfig{Attempts: 1},
				Wrap: func(h http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						switch {
						case r.URL.Path == api.PathVersion && !tc.bounded:
							io.WriteString(w, `{"api": 1, "batchUpload": true}`)
							return
						case r.URL.Path == api.PathFiles:
							mu.Lock()
							batches = append(batches, r.URL.RawQuery)
							mu.Unlock()
						}
						h.ServeHTTP(w, r)
					})
				}}).Client
			v, err := c.Version(t.Context())
			if err != nil || !c.CanBatch() || tc.bounded != (v.BatchMaxBytes == 2<<20) {
				t.Fatalf("version %+v %v", v, err)
			}
			// Five files of 900,000 bytes: two fit in 2 MiB of tar.
			var files []transfer.BatchFile
			body := strings.Repeat("9", 900_000)
			for i := range 5 {
				files = append(files, transfer.BatchFile{Rel: fmt.Sprintf("a.com/g/%d", i), Size: int64(len(body)),
					Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }})
			}
			outs, tree, err := c.PutFiles(t.Context(), files, true)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(body))
			for i, o := range outs {
				if o.Err != nil || o.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("file %d: %+v", i, o)
				}
			}
			if len(outs) != 5 || len(tree) != 5 {
				t.Errorf("%d outcomes, a tree of %d files; want 5 of each", len(outs), len(tree))
			}
			want := strings.Repeat(" ", tc.batches-1) + api.QueryTree + "=1"
			if got := strings.Join(batches, " "); got != want {
				t.Errorf("batches asked %q, want %d asking for the tree in the last", got, tc.batches)
			}
		})
	}
}

// Against a TLS server that offers HTTP/2, uploads (a file, a batch) go
// over HTTP/1.1, a connection each, and every other request over HTTP/2;
// against plain http, everything is HTTP/1.1.
func TestHTTP2WhereOfferedUploadsOnHTTP1(t *testing.T) {
	var mu sync.Mutex
	protos := map[string]string{} // "<server> <request>" -> protocol
	serve := func(name string) func(http.Handler) http.Handler {
		return func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				protos[name+" "+r.Method+" "+r.URL.Path] = r.Proto
				mu.Unlock()
				h.ServeHTTP(w, r)
			})
		}
	}
	tls := contracttest.Start(t, contracttest.Options{Wrap: serve("tls"), TLS: true,
		Unstarted: func(s *httptest.Server) { s.EnableHTTP2 = true }})
	plain := contracttest.Start(t, contracttest.Options{Wrap: serve("plain")})
	abc := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("abc")), nil }
	ctx := t.Context()
	for _, srv := range []*contracttest.Env{tls, plain} {
		c := srv.Client
		c.Warm(ctx, 2) // connections opened ahead are for uploads, and stay HTTP/1.1
		if _, err := c.Version(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Tree(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteFile(ctx, "a.com/g/y"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutFile(ctx, "a.com/g/x", 3, abc); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.PutFiles(ctx, []transfer.BatchFile{{Rel: "a.com/g/x", Size: 3, Open: abc}}, false); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{}
	for _, srv := range []string{"tls", "plain"} {
		small := "HTTP/2.0"
		if srv == "plain" {
			small = "HTTP/1.1"
		}
		want[srv+" GET "+api.PathVersion] = small
		want[srv+" GET "+api.PathTree] = small
		want[srv+" DELETE "+api.PathFile] = small
		want[srv+" PUT "+api.PathFile] = "HTTP/1.1"
		want[srv+" PUT "+api.PathFiles] = "HTTP/1.1"
	}
	if !maps.Equal(protos, want) {
		t.Errorf("protocols\n got %v\nwant %v", protos, want)
	}
}

// Warm opens that many connections ahead, each through its TLS handshake,
// and the upload transport takes them: uploads made then open no more.
func TestWarmOpensConnections(t *testing.T) {
	opened := make(chan struct{}, 100)
	c := contracttest.Start(t, contracttest.Options{TLS: true, Client: apiclient.ClientConfig{Conns: 8},
		Unstarted: func(s *httptest.Server) {
			s.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					opened <- struct{}{}
				}
			}
		}}).Client
	c.Warm(context.Background(), 5)
	c.Warm(context.Background(), 3) // no more than asked, however often
	for range 5 {
		<-opened
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.PutFile(context.Background(), "a.com/g/x", 3, func() (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader("abc")), nil
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	select {
	case <-opened:
		t.Fatal("uploads opened a connection of their own although five were opened ahead")
	default:
	}
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.RTT() == 0 {
		t.Fatal("no round trip was timed")
	}
}

// TestEveryRequestGoesOneWay: each of the client's requests carries the
// token, is tried again after a 503, and reads its answer.
func TestEveryRequestGoesOneWay(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	e := contracttest.Start(t, contracttest.Options{Client: apiclient.ClientConfig{RetryBase: time.Millisecond},
		Routes: func(e *contracttest.Env) map[string]http.Handler {
			return tools.Routes(tools.Options{LogsRoot: e.LogsRoot, Variant: e.Variant})
		},
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				kind := r.Method + " " + r.URL.Path
				mu.Lock()
				seen[kind]++
				first := seen[kind] == 1
				mu.Unlock()
				if r.Header.Get("Authorization") != "Bearer "+secret {
					t.Errorf("%s without the token", kind)
				}
				if first {
					io.Copy(io.Discard, r.Body)
					http.Error(w, `{"error": "busy"}`, http.StatusServiceUnavailable)
					return
				}
				h.ServeHTTP(w, r)
			})
		}})
	active := filepath.Join(e.LogsRoot, "web-logs", "access.log")
	if err := os.MkdirAll(filepath.Dir(active), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(active, []byte("line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.Client
	ctx := t.Context()
	abc := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("abc")), nil }
	for name, request := range map[string]func() error{
		"version": func() error { _, err := c.Version(ctx); return err },
		"tree":    func() error { _, err := c.Tree(ctx); return err },
		"put":     func() error { _, err := c.PutFile(ctx, "a.com/g/x", 3, abc); return err },
		"batch": func() error {
			outs, _, err := c.PutFiles(ctx, []transfer.BatchFile{{Rel: "a.com/g/x", Size: 3, Open: abc}}, false)
			for _, o := range outs {
				err = errors.Join(err, o.Err)
			}
			return err
		},
		"delete":  func() error { return c.DeleteFile(ctx, "a.com/g/x") },
		"listing": func() error { _, err := c.Logs(ctx); return err },
		"fetch": func() error {
			f, err := c.Fetch(ctx, api.PathLogsFile, url.Values{"which": {"active"}}, 0)
			if err == nil {
				f.Body.Close()
			}
			return err
		},
	} {
		if err := request(); err != nil {
			t.Errorf("%s after a 503: %v", name, err)
		}
	}
	for kind, n := range seen {
		if n != 2 {
			t.Errorf("%s: %d requests, want 2", kind, n)
		}
	}
	if len(seen) != 7 {
		t.Errorf("requests seen: %v", seen)
	}
}
