package apiclient

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/server"
)

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
			s, err := server.New(server.Options{Token: secret, GamesRoot: filepath.Join(t.TempDir(), "hoster-games"), MaxUpload: limit})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var mu sync.Mutex
			var batches []string // the query of each batch request
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == api.PathVersion && !tc.bounded:
					io.WriteString(w, `{"api": 1, "batchUpload": true}`)
					return
				case r.URL.Path == api.PathFiles:
					mu.Lock()
					batches = append(batches, r.URL.RawQuery)
					mu.Unlock()
				}
				s.Handler().ServeHTTP(w, r)
			}))
			defer srv.Close()
			c, err := NewClient(ClientConfig{Server: srv.URL, Token: secret, Attempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.Version(t.Context())
			if err != nil || !c.CanBatch() || tc.bounded != (v.BatchMaxBytes == 2<<20) {
				t.Fatalf("version %+v %v", v, err)
			}
			// Five files of 900,000 bytes: two fit in 2 MiB of tar.
			var files []api.BatchFile
			body := strings.Repeat("9", 900_000)
			for i := range 5 {
				files = append(files, api.BatchFile{Rel: fmt.Sprintf("a.com/g/%d", i), Size: int64(len(body)),
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

// splitBatch keeps to each bound it is told, keeps the files' order, and
// sends a file too big for any batch in one of its own.
func TestSplitBatch(t *testing.T) {
	f := func(rel string, size int64) api.BatchFile { return api.BatchFile{Rel: rel, Size: size} }
	files := []api.BatchFile{f("a.com/g/1", 10), f("a.com/g/2", 600), f("a.com/g/33", 10), f("a.com/g/4", 5000), f("a.com/g/5", 0)}
	for _, tc := range []struct {
		bounds batchBounds
		want   string
	}{
		{batchBounds{}, "[[1 2 33 4 5]]"},
		{batchBounds{files: 2}, "[[1 2] [33 4] [5]]"},
		// Each file here is a 512-byte header and its blocks; 1,024 end the stream.
		{batchBounds{bytes: 1024 + 512 + 512 + 512 + 1024}, "[[1 2] [33] [4] [5]]"},
		{batchBounds{names: 19}, "[[1 2] [33 4] [5]]"},
	} {
		parts, err := splitBatch(files, tc.bounds)
		var got []string
		for _, p := range parts {
			var names []string
			for _, f := range p {
				names = append(names, strings.TrimPrefix(f.Rel, "a.com/g/"))
			}
			got = append(got, "["+strings.Join(names, " ")+"]")
		}
		if s := "[" + strings.Join(got, " ") + "]"; err != nil || s != tc.want {
			t.Errorf("%+v: %s %v, want %s", tc.bounds, s, err, tc.want)
		}
	}
}
