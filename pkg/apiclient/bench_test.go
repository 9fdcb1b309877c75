package apiclient

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/transfer"
)

// BenchmarkRequests is the client's own cost per request on loopback, for
// each kind of request, against a server that does nothing but answer.
func BenchmarkRequests(b *testing.B) {
	mib := bytes.Repeat([]byte("x"), 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		switch {
		case r.Method == http.MethodPut && r.URL.Path == api.PathFiles:
			io.WriteString(w, `{"files": [`+strings.TrimSuffix(strings.Repeat(`{"path": "a.com/g/x", "size": 4096},`, 16), ",")+`]}`)
		case r.Method == http.MethodPut:
			fmt.Fprintf(w, `{"size": %d}`, n)
		case r.Method == http.MethodDelete:
			io.WriteString(w, `{"deleted": true}`)
		case strings.HasSuffix(r.URL.Path, api.PathLogsFile):
			w.Write(mib)
		default:
			io.WriteString(w, `{"api": 1}`)
		}
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{Server: srv.URL, Token: secret})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	put := func(size int) func() error {
		data := mib[:size]
		return func() error {
			_, err := c.PutFile(ctx, "a.com/g/x", int64(size), func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(data)), nil
			})
			return err
		}
	}
	batch := make([]transfer.BatchFile, 16)
	for i := range batch {
		batch[i] = transfer.BatchFile{Rel: "a.com/g/x", Size: 4096, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(mib[:4096])), nil
		}}
	}
	for _, bc := range []struct {
		name string
		do   func() error
	}{
		{"version", func() error { _, err := c.Version(ctx); return err }},
		{"put-4KiB", put(4 << 10)},
		{"put-1MiB", put(1 << 20)},
		{"batch-16x4KiB", func() error { _, _, err := c.PutFiles(ctx, batch, false); return err }},
		{"delete", func() error { return c.DeleteFile(ctx, "a.com/g/x") }},
		{"fetch-1MiB", func() error {
			f, err := c.Fetch(ctx, api.PathLogsFile, url.Values{"which": {"active"}}, 0)
			if err == nil {
				io.Copy(io.Discard, f.Body)
				f.Body.Close()
			}
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := bc.do(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
