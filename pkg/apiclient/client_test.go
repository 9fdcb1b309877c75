package apiclient

import (
	"context"
	"errors"
	"fmt"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/transfer"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const secret = "s3cr3t-token-value-0123456789abcdef0123456789abcdef0123456789ab"

func TestPinAndBareIP(t *testing.T) {
	var auths atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			auths.Add(1)
		}
		io.WriteString(w, `{"api": 1}`)
	}))
	defer srv.Close()
	fp := Fingerprint(srv.Certificate().Raw)
	ctx := context.Background()

	// The right pin, in the colon form browsers show.
	colons := strings.ToUpper(fp[:2])
	for i := 2; i < len(fp); i += 2 {
		colons += ":" + strings.ToUpper(fp[i:i+2])
	}
	c, err := NewClient(ClientConfig{Server: srv.URL, Token: secret, CertSHA256: colons})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Version(ctx); err != nil || v.API != 1 {
		t.Fatalf("pinned: %v %v", v, err)
	}

	// A wrong pin names both fingerprints and is not retried.
	wrong := strings.Repeat("ab", 32)
	c, _ = NewClient(ClientConfig{Server: srv.URL, Token: secret, CertSHA256: wrong})
	_, err = c.Version(ctx)
	var pe *PinError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), fp) || !strings.Contains(err.Error(), wrong) {
		t.Fatalf("wrong pin: %v", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatal("the token is in an error")
	}

	// No pin, addressed by IP or by name: verified as usual, so a
	// self-signed certificate is refused before the token is sent, and the
	// refusal offers the pin. Not retried: nothing will change.
	auths.Store(0)
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, u := range []string{srv.URL, byName} {
		c, _ = NewClient(ClientConfig{Server: u, Token: secret, Attempts: 3})
		_, err = c.Version(ctx)
		var ue *UntrustedError
		var e *Error
		if !errors.As(err, &ue) || ue.Fingerprint != fp || !strings.Contains(err.Error(), "hoster-config-certSha256") ||
			!errors.As(err, &e) || e.Transient || e.Attempts > 1 {
			t.Fatalf("self-signed at %s without a pin: %v", u, err)
		}
	}
	if n := auths.Load(); n != 0 {
		t.Fatalf("the unverified server saw the token %d times", n)
	}

	// Verification explicitly off: accepted, with a warning that offers the pin.
	var warned string
	c, _ = NewClient(ClientConfig{Server: srv.URL, InsecureSkipVerify: true, Warn: func(s string) { warned = s }})
	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("verification off: %v", err)
	}
	if !strings.Contains(warned, fp) || !strings.Contains(warned, "verification is off") {
		t.Fatalf("warning %q does not say verification is off and offer the pin", warned)
	}
	if _, err := NewClient(ClientConfig{Server: srv.URL, CertSHA256: "xyz"}); err == nil {
		t.Fatal("a malformed pin was accepted")
	}
	if _, err := NewClient(ClientConfig{Server: "ftp://x"}); err == nil {
		t.Fatal("a non-http URL was accepted")
	}
}

func TestRetriesReopenTheBody(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer "+secret || r.ContentLength != 5 {
			t.Errorf("auth %q, length %d", r.Header.Get("Authorization"), r.ContentLength)
		}
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(503)
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
		default:
			if string(b) != "hello" {
				t.Errorf("retried body %q: it was not reopened", b)
			}
			io.WriteString(w, `{"size": 5}`)
		}
	}))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{Server: srv.URL, Token: secret, RetryBase: 1})
	opens := 0
	_, err := c.PutFile(context.Background(), "a.com/g/f", 5, func() (io.ReadCloser, error) {
		opens++
		return io.NopCloser(strings.NewReader("hello")), nil
	})
	if err != nil || calls.Load() != 3 || opens != 3 {
		t.Fatalf("err %v, %d calls, %d opens", err, calls.Load(), opens)
	}
}

func TestAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/tree", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("PUT /api/file", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Query().Get("path") {
		case "v2/fail/x":
			io.WriteString(w, `{"size": 0, "ok": false, "error": "disk full"}`)
		case "v1/bad/x":
			w.WriteHeader(400)
			io.WriteString(w, `{"error": "invalid path"}`)
		default:
			w.WriteHeader(500)
			io.WriteString(w, `{"error": "broken"}`)
		}
	})
	mux.HandleFunc("DELETE /api/file", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok": true}`) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, _ := NewClient(ClientConfig{Server: srv.URL, Token: secret, Attempts: 2, RetryBase: 1})
	ctx := context.Background()
	open := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }

	if _, err := c.Tree(ctx); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "token may be wrong") {
		t.Fatalf("404: %v", err)
	}
	if _, err := c.PutFile(ctx, "v2/fail/x", 1, open); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("v2 ok:false: %v", err)
	}
	if _, err := c.PutFile(ctx, "v1/bad/x", 1, open); err == nil || !strings.Contains(err.Error(), "400: invalid path") || strings.Contains(err.Error(), "attempts") {
		t.Fatalf("400 must fail at once: %v", err)
	}
	if _, err := c.PutFile(ctx, "v1/broken/x", 1, open); err == nil || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("500 must be retried: %v", err)
	}
	if err := c.DeleteFile(ctx, "a.com/g/x"); err != nil {
		t.Fatalf("v2 delete: %v", err)
	}
}

// Whatever is configured as a pin, an accepted one is exactly 64 lowercase
// hex digits, and normalising it again changes nothing.
func FuzzNormalisePin(f *testing.F) {
	for _, s := range []string{"", strings.Repeat("ab", 32), strings.Repeat("AB:", 31) + "AB", "zz", strings.Repeat("a", 63), " " + strings.Repeat("0", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pin string) {
		p, err := normalisePin(pin)
		if err != nil || pin == "" {
			if pin == "" && (err != nil || p != "") {
				t.Fatalf("an empty pin = %q, %v", p, err)
			}
			return
		}
		if len(p) != 64 || strings.Trim(p, "0123456789abcdef") != "" {
			t.Fatalf("accepted %q as %q", pin, p)
		}
		if again, err := normalisePin(p); err != nil || again != p {
			t.Fatalf("normalising %q again gave %q, %v", p, again, err)
		}
	})
}

// TestFetchRetriesAsEveryRequestDoes: a tools file answered 503 once is
// fetched on the next attempt, as the other requests are retried.
func TestFetchRetriesAsEveryRequestDoes(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, `{"error": "busy"}`, http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "line\n")
	}))
	defer ts.Close()
	c, err := NewClient(ClientConfig{Server: ts.URL, Token: "t", Attempts: 3, RetryBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Fetch(t.Context(), api.PathLogsFile, url.Values{"which": {"active"}}, 0)
	if err != nil {
		t.Fatalf("fetch after one 503: %v", err)
	}
	defer f.Body.Close()
	body, _ := io.ReadAll(f.Body)
	if string(body) != "line\n" || calls.Load() != 2 {
		t.Fatalf("got %q after %d requests", body, calls.Load())
	}
}

// TestPutFileStreams: an upload's body reaches the server while the client
// is still reading the file, with its Content-Length: it is never read whole
// into memory first.
func TestPutFileStreams(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 10 {
			t.Errorf("Content-Length %d, want 10", r.ContentLength)
		}
		first := make([]byte, 5)
		io.ReadFull(r.Body, first)
		got <- string(first)
		rest, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, `{"size": %d}`, len(first)+len(rest))
	}))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{Server: srv.URL, Token: secret})
	// The file's second half is given only once the server has its first.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("first"))
		select {
		case <-got:
			pw.Write([]byte("after"))
			pw.Close()
		case <-time.After(20 * time.Second): // a hang guard
			pw.CloseWithError(errors.New("the server never got the first half"))
		}
	}()
	if _, err := c.PutFile(t.Context(), "a.com/g/x", 10, func() (io.ReadCloser, error) { return pr, nil }); err != nil {
		t.Fatal(err)
	}
}

// A batch is sent with its length told (no chunked encoding on either
// hop), and the length is exactly the tar stream's, whatever the names
// (long ones and non-ASCII ones take PAX headers) and sizes.
func TestBatchLengthIsTold(t *testing.T) {
	type seen struct {
		length    int64
		chunked   bool
		bodyBytes int64
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.PathVersion {
			io.WriteString(w, `{"api": 1, "batchUpload": true}`)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		got <- seen{r.ContentLength, len(r.TransferEncoding) > 0, n}
		w.WriteHeader(500) // the answer does not matter here
	}))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{Server: srv.URL, Token: secret, Attempts: 1})
	var files []transfer.BatchFile
	names := []string{"a.com/g/x", "a.com/g/" + strings.Repeat("long-", 30) + ".js", "a.com/g/é/ü.txt"}
	for i, size := range []int{0, 1, 511, 512, 513, 70000} {
		body := strings.Repeat("z", size)
		files = append(files, transfer.BatchFile{Rel: fmt.Sprintf("%s%d", names[i%len(names)], i), Size: int64(size),
			Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }})
	}
	c.PutFiles(t.Context(), files, false)
	s := <-got
	if s.chunked || s.length != s.bodyBytes || s.length <= 0 {
		t.Fatalf("Content-Length %d, chunked %v, body %d bytes", s.length, s.chunked, s.bodyBytes)
	}
}
