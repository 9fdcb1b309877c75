package contracttest

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/apiclient"
)

// The harness's server answers in the variant asked, behind Wrap, over
// plain http and TLS alike, and its client reaches it with the token.
func TestStart(t *testing.T) {
	EachVariant(t, func(t *testing.T, v api.Variant) {
		for _, tls := range []bool{false, true} {
			var seen atomic.Int32
			e := Start(t, Options{Variant: v, TLS: tls, Client: apiclient.ClientConfig{Attempts: 1},
				Wrap: func(h http.Handler) http.Handler {
					return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1); h.ServeHTTP(w, r) })
				}})
			if e.Variant != v || strings.HasPrefix(e.URL, "https://") != tls {
				t.Fatalf("env %+v", e)
			}
			if _, err := e.Client.PutFile(t.Context(), "a.com/g/x.txt", 3, func() (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader("abc")), nil
			}); err != nil {
				t.Fatal(err)
			}
			tree, err := e.Client.Tree(t.Context())
			if err != nil || len(tree) != 1 || seen.Load() != 2 {
				t.Fatalf("tree %v, %v, %d requests seen", tree, err, seen.Load())
			}
		}
	})
}
