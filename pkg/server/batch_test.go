package server

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/quiettest"
	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/store"
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

// sparseEntry writes to tw (which writes to buf) a PAX GNU sparse file
// (format 1.0) named name, of realSize bytes all but the last of them a
// hole: a few blocks that a tar reader expands to realSize bytes. The
// archive/tar writer refuses to write the PAX header itself, so it is
// written as a regular file and its type patched.
func sparseEntry(t *testing.T, tw *tar.Writer, buf *bytes.Buffer, name string, realSize int64) {
	t.Helper()
	record := func(k, v string) string { // "<len> k=v\n", len counting itself
		s := " " + k + "=" + v + "\n"
		n := len(s) + 1
		for len(fmt.Sprint(n))+len(s) != n {
			n++
		}
		return fmt.Sprint(n) + s
	}
	recs := record("GNU.sparse.major", "1") + record("GNU.sparse.minor", "0") +
		record("GNU.sparse.name", name) + record("GNU.sparse.realsize", fmt.Sprint(realSize))
	tw.Flush()
	at := buf.Len()
	if err := tw.WriteHeader(&tar.Header{Name: "PaxHeaders/sparse", Size: int64(len(recs)), Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(recs))
	tw.Flush()
	hdr := buf.Bytes()[at : at+512]
	hdr[156] = tar.TypeXHeader
	copy(hdr[148:156], "        ")
	sum := 0
	for _, c := range hdr {
		sum += int(c)
	}
	copy(hdr[148:156], fmt.Sprintf("%06o\x00 ", sum))
	// The map (one byte of data at the very end), padded to a block, then the data.
	data := make([]byte, 512, 513)
	copy(data, fmt.Sprintf("1\n%d\n1\n", realSize-1))
	data = append(data, 'z')
	if err := tw.WriteHeader(&tar.Header{Name: "GNUSparseFile.0/sparse", Size: int64(len(data)), Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(data)
}

// wantBatchRefused checks that a batch was refused as a whole, in the
// variant's way, with an error that says errPart.
func wantBatchRefused(t *testing.T, v api.Variant, r result, status int, errPart string) {
	t.Helper()
	msg, _ := r.body["error"].(string)
	if v == api.Variant1 && r.status != status || v == api.Variant2 && (r.status != 200 || r.body["ok"] != false) ||
		!strings.Contains(msg, errPart) {
		t.Errorf("answer %d %v, want the batch refused (%d in variant 1) saying %q", r.status, r.body, status, errPart)
	}
}

// TestBatchTakesRegularFilesOnly: an entry that is not a regular file (a
// sparse file in PAX records, which a tar reader would expand to far more
// than the request carries; a link, a folder, a device, a pipe) fails the
// batch at once, in both variants, with an error naming it: it writes
// nothing, nor does anything after it; the files before it are written.
func TestBatchTakesRegularFilesOnly(t *testing.T) {
	for _, v := range []api.Variant{api.Variant1, api.Variant2} {
		e := start(t, Options{Token: token, Variant: v})
		for kind, bad := range map[string]*tar.Header{
			"a sparse file":   nil,
			"a symbolic link": {Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
			"a hard link":     {Typeflag: tar.TypeLink, Linkname: "a.com/g/before.txt"},
			"a folder":        {Typeflag: tar.TypeDir},
			"a device":        {Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3},
			"a named pipe":    {Typeflag: tar.TypeFifo},
		} {
			t.Run(fmt.Sprintf("variant%d/%s", v, kind), func(t *testing.T) {
				dir := strings.ReplaceAll(kind, " ", "-")
				var buf bytes.Buffer
				tw := tar.NewWriter(&buf)
				put := func(name, content string) {
					tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(content)), Mode: 0o644, Typeflag: tar.TypeReg})
					tw.Write([]byte(content))
				}
				put("a.com/"+dir+"/before.txt", "before")
				if bad == nil {
					sparseEntry(t, tw, &buf, "a.com/"+dir+"/bad", 64<<20)
				} else {
					bad.Name, bad.Mode = "a.com/"+dir+"/bad", 0o644
					if err := tw.WriteHeader(bad); err != nil {
						t.Fatal(err)
					}
				}
				put("a.com/"+dir+"/after.txt", "after")
				tw.Close()
				r := call(t, e, "PUT", api.PathFiles, bytes.NewReader(buf.Bytes()))
				wantBatchRefused(t, v, r, 400, fmt.Sprintf("file 2 (\"a.com/%s/bad\") is %s: a batch takes regular files only", dir, kind))
				if b, err := os.ReadFile(filepath.Join(e.games, "a.com", dir, "before.txt")); string(b) != "before" {
					t.Errorf("the file before: %q %v", b, err)
				}
				left, _ := os.ReadDir(filepath.Join(e.games, "a.com", dir))
				if len(left) != 1 {
					t.Errorf("%s holds %v, want only before.txt", dir, left)
				}
			})
		}
	}
}

// offer is the server's /api/version.
func offer(t *testing.T, e *env) api.VersionInfo {
	t.Helper()
	var v api.VersionInfo
	if err := json.NewDecoder(e.do(t, "GET", api.PathVersion, "", nil).Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBatchBounds: /api/version offers the batch's bounds, and a batch past
// one of them is refused as a whole, in both variants, as soon as it is
// past (by its Content-Length when it has one, before anything is
// written), with an answer that does not grow with it.
func TestBatchBounds(t *testing.T) {
	for _, v := range []api.Variant{api.Variant1, api.Variant2} {
		t.Run(fmt.Sprint("variant", v), func(t *testing.T) {
			// An upload limit of 1 MiB makes a batch bound of 2 MiB.
			e := start(t, Options{Token: token, Variant: v, MaxUpload: 1 << 20})
			want := api.VersionInfo{API: api.Version, BatchUpload: true, BatchMaxFiles: 10_000, BatchMaxBytes: 2 << 20, BatchMaxNameBytes: 1 << 20}
			if got := offer(t, e); got != want {
				t.Errorf("/api/version %+v, want %+v", got, want)
			}
			// Three files of 900,000 bytes: the second ends at 1,801,216
			// bytes of tar, the third's bytes go past 2 MiB.
			big := strings.Repeat("9", 900_000)
			body := tarOf(t, [2]string{"a.com/g/1", big}, [2]string{"a.com/g/2", big}, [2]string{"a.com/g/3", big})
			r := call(t, e, "PUT", api.PathFiles, bytes.NewReader(body))
			wantBatchRefused(t, v, r, 413, "longer than the server's bound of 2097152 bytes")
			if _, err := os.Stat(filepath.Join(e.games, "a.com")); err == nil {
				t.Error("a batch over its Content-Length's bound wrote files")
			}
			// Without its length told, it is cut off where it passes.
			r = call(t, e, "PUT", api.PathFiles, io.MultiReader(bytes.NewReader(body)))
			wantBatchRefused(t, v, r, 413, "longer than the server's bound of 2097152 bytes")
			if left, _ := os.ReadDir(filepath.Join(e.games, "a.com/g")); len(left) != 2 || left[0].Name() != "1" || left[1].Name() != "2" {
				t.Errorf("a.com/g holds %v, want the two files before the bound", left)
			}
			// A file at the upload limit fits in a batch of its own, even
			// where the limit is small.
			e = start(t, Options{Token: token, Variant: v, MaxUpload: 1 << 10})
			if got := offer(t, e).BatchMaxBytes; got != 1<<10+1<<20 {
				t.Errorf("the bound with an upload limit of 1 KiB: %d", got)
			}
			r = call(t, e, "PUT", api.PathFiles, bytes.NewReader(tarOf(t, [2]string{"a.com/g/" + strings.Repeat("long/", 200) + "f", strings.Repeat("x", 1<<10)})))
			if files, _ := r.body["files"].([]any); r.status != 200 || len(files) != 1 || files[0].(map[string]any)["size"] != float64(1<<10) {
				t.Errorf("a file at the limit alone: %d %v", r.status, r.body)
			}

			// Names that add up to more than 1 MiB (each far from the
			// tar reader's own bound on a header), on a server whose
			// bound on bytes lets them through.
			e = start(t, Options{Token: token, Variant: v})
			long := "a.com/g/" + strings.Repeat("n", 600_000)
			r = call(t, e, "PUT", api.PathFiles, bytes.NewReader(tarOf(t, [2]string{long, ""}, [2]string{long + "2", ""})))
			wantBatchRefused(t, v, r, 400, "file names add up to more than 1048576 bytes")
			if n := len(fmt.Sprint(r.body)); n > 1000 {
				t.Errorf("the answer to 1.2 MB of names is %d bytes", n)
			}
		})
	}
}

// TestBatchFileCount: a batch of more files than the bound is refused at
// the first file past it, in both variants, without reading the rest of
// its body (which here never ends), with a short answer.
func TestBatchFileCount(t *testing.T) {
	for _, v := range []api.Variant{api.Variant1, api.Variant2} {
		t.Run(fmt.Sprint("variant", v), func(t *testing.T) {
			e := start(t, Options{Token: token, Variant: v})
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for i := 0; i <= 10_000; i++ { // BatchMaxFiles, and one more
				// Too shallow to be written: each answers "invalid path".
				tw.WriteHeader(&tar.Header{Name: "a.com/x", Mode: 0o644, Typeflag: tar.TypeReg})
			}
			tw.Flush() // no end: the body goes on
			body, feed := io.Pipe()
			defer feed.Close()
			go feed.Write(buf.Bytes())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard only
			defer cancel()
			context.AfterFunc(ctx, func() { feed.CloseWithError(ctx.Err()) })
			req, _ := http.NewRequestWithContext(ctx, "PUT", e.url+api.PathFiles, body)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if ctx.Err() != nil {
				t.Fatal("the batch past its bound was read on")
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			answer, _ := io.ReadAll(resp.Body)
			var m map[string]any
			json.Unmarshal(answer, &m)
			wantBatchRefused(t, v, result{resp.StatusCode, m}, 400, "it has more than 10000 files, the server's bound")
			if len(answer) > 1000 {
				t.Errorf("the answer is %d bytes", len(answer))
			}
		})
	}
}

// TestBatchReloadsOnceAfterAStall: a batch whose body stalls inside its
// second file, for longer than the quiet period, reloads its game once,
// after the batch ends, whether it ends well or is cut off.
func TestBatchReloadsOnceAfterAStall(t *testing.T) {
	for _, ends := range []string{"well", "cut off"} {
		t.Run(ends, func(t *testing.T) {
			var mu sync.Mutex
			reloads := map[string]int{}
			s, err := New(Options{Token: token, GamesRoot: filepath.Join(t.TempDir(), "hoster-games"), OnReload: func(d, g string) {
				mu.Lock()
				reloads[d+"/"+g]++
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			clock := &quiettest.Timers{}
			s.debouncer.Close()
			s.debouncer = store.NewDebouncer(time.Hour, s.reload).WithTimers(
				func(d time.Duration, f func()) store.QuietTimer { return clock.After(d, f) })
			ts := httptest.NewServer(s.Handler())
			defer s.Close()
			defer ts.Close()
			count := func() string { mu.Lock(); defer mu.Unlock(); return fmt.Sprint(reloads) }

			body := tarOf(t, [2]string{"a.com/g/one.txt", "one"}, [2]string{"a.com/g/two.txt", strings.Repeat("two ", 1000)})
			stall := 512 + 512 + 512 + 2000 // one's header and block, two's header, half of two
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("PUT", ts.URL+api.PathFiles, pr)
			req.Header.Set("Authorization", "Bearer "+token)
			answered := make(chan int, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answered <- 0
					return
				}
				resp.Body.Close()
				answered <- resp.StatusCode
			}()
			pw.Write(body[:stall])
			clock.WaitArmed(1) // one.txt is written: its game's quiet period began
			clock.Fire(0)      // and ends while the body stalls inside two.txt
			if got := count(); got != "map[]" {
				t.Errorf("reloads %s while the batch was under way", got)
			}
			if ends == "well" {
				pw.Write(body[stall:])
				pw.Close()
				if status := <-answered; status != 200 {
					t.Fatalf("the batch: %d", status)
				}
			} else {
				pw.CloseWithError(errors.New("cut off"))
				<-answered
			}
			ts.Close() // waits for the handler, and so for the batch's end
			s.Close()  // ends the quiet period at once
			if got := count(); got != "map[a.com/g:1]" {
				t.Errorf("reloads %s, want a.com/g once", got)
			}
		})
	}
}
