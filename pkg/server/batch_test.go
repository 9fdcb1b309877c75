package server

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
)

func tarOf(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Size: int64(len(f[1])), Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f[1]))
	}
	tw.Close()
	return b.Bytes()
}

// The batch upload, in both variants: advertised in /api/version behind no
// token; each file written as a PUT writes it (atomically, with its hash in
// the tree); a path outside the games root is refused and written nowhere;
// a whole batch reloads its game once; a damaged stream fails the request in
// the variant's way after the files before the damage.
func TestBatchUploadBothVariants(t *testing.T) {
	for _, variant := range []api.Variant{api.Variant1, api.Variant2} {
		t.Run(fmt.Sprint("variant", variant), func(t *testing.T) {
			var mu sync.Mutex
			reloads := map[string]int{}
			fired := make(chan struct{}, 16)
			dir := t.TempDir()
			e := start(t, Options{Token: token, Variant: variant, GamesRoot: filepath.Join(dir, "hoster-games"),
				ReloadDebounce: 50 * time.Millisecond, OnReload: func(d, g string) {
					mu.Lock()
					reloads[d+"/"+g]++
					mu.Unlock()
					fired <- struct{}{}
				}})
			var v api.VersionInfo
			json.NewDecoder(e.do(t, "GET", api.PathVersion, "", nil).Body).Decode(&v)
			if !v.BatchUpload {
				t.Fatalf("/api/version does not offer the batch upload: %+v", v)
			}
			if resp := e.do(t, "PUT", api.PathFiles, "", bytes.NewReader(tarOf(t))); resp.StatusCode != 404 {
				t.Fatalf("a batch without the token: %d", resp.StatusCode)
			}

			body := tarOf(t, [2]string{"a.com/g/x.txt", "xx"}, [2]string{"a.com/../escape.txt", "no"},
				[2]string{"a.com/g/sub/y.txt", "yyy"}, [2]string{"a.com/top.txt", "too shallow"})
			resp := e.do(t, "PUT", api.PathFiles, token, bytes.NewReader(body))
			var res api.BatchResult
			if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 || len(res.Files) != 4 {
				t.Fatalf("batch: %d %+v %v", resp.StatusCode, res, err)
			}
			sumOf := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
			want := []api.BatchFileResult{{Path: "a.com/g/x.txt", Size: 2, SHA256: sumOf("xx")}, {Path: "a.com/../escape.txt", Error: api.ErrInvalidPath},
				{Path: "a.com/g/sub/y.txt", Size: 3, SHA256: sumOf("yyy")}, {Path: "a.com/top.txt", Error: api.ErrInvalidPath}}
			for i := range want {
				if res.Files[i] != want[i] {
					t.Errorf("file %d: %+v, want %+v", i, res.Files[i], want[i])
				}
			}
			for _, p := range []string{"escape.txt", "hoster-games/escape.txt", "hoster-games/a.com/top.txt"} {
				if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%s was written", p)
				}
			}
			tree := map[string]string{}
			json.NewDecoder(e.do(t, "GET", api.PathTree, token, nil).Body).Decode(&tree)
			for p, content := range map[string]string{"a.com/g/x.txt": "xx", "a.com/g/sub/y.txt": "yyy"} {
				if tree[p] != sumOf(content) {
					t.Errorf("tree[%s] = %q", p, tree[p])
				}
			}
			if res.Tree != nil {
				t.Errorf("a batch that did not ask for the tree got it: %v", *res.Tree)
			}
			<-fired
			mu.Lock()
			if len(reloads) != 1 || reloads["a.com/g"] != 1 {
				t.Errorf("reloads %v, want a.com/g once", reloads)
			}
			mu.Unlock()

			// A stream cut inside its second file: the first is written,
			// the second is not (not even in part), the request fails.
			body = tarOf(t, [2]string{"a.com/g/first.txt", "1"}, [2]string{"a.com/g/x.txt", strings.Repeat("new x, cut ", 100)})
			// The second file's 1,100 bytes end 924 bytes (its padding)
			// before the 1,024-byte trailer: cut 500 bytes into them.
			r := call(t, e, "PUT", api.PathFiles, bytes.NewReader(body[:len(body)-1024-924-600]))
			if variant == api.Variant1 && (r.status != 400 || r.body["error"] == nil) ||
				variant == api.Variant2 && (r.status != 200 || r.body["ok"] != false || r.body["error"] == nil) {
				t.Errorf("cut batch: %d %v", r.status, r.body)
			}
			if b, _ := os.ReadFile(filepath.Join(e.games, "a.com/g/first.txt")); string(b) != "1" {
				t.Errorf("the file before the cut: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(e.games, "a.com/g/x.txt")); string(b) != "xx" {
				t.Errorf("the cut file replaced the old one: %q", b)
			}

			// Asked for, the tree comes back as it stands after the batch.
			resp = e.do(t, "PUT", api.PathFiles+"?"+api.QueryTree+"=1", token, bytes.NewReader(tarOf(t, [2]string{"a.com/g/z.txt", "z"})))
			res = api.BatchResult{}
			if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 || res.Tree == nil {
				t.Fatalf("batch asking for the tree: %d %+v %v", resp.StatusCode, res, err)
			}
			tree = map[string]string{}
			json.NewDecoder(e.do(t, "GET", api.PathTree, token, nil).Body).Decode(&tree)
			if (*res.Tree)["a.com/g/z.txt"] != sumOf("z") || !maps.Equal(*res.Tree, tree) {
				t.Errorf("the tree after the batch %v, want %v with a.com/g/z.txt", *res.Tree, tree)
			}
		})
	}
}
