package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hoster-dev/hoster/internal/contracttest"
	"github.com/hoster-dev/hoster/pkg/api"
)

const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

type env struct {
	url  string
	logs string
}

func plant(t *testing.T, root, rel, body string, mtime time.Time) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		os.Chtimes(p, mtime, mtime)
	}
}

// start serves the tools routes behind the real server (auth, uniform 404).
func start(t *testing.T, variant api.Variant) *env {
	t.Helper()
	s := contracttest.Start(t, contracttest.Options{Variant: variant, Token: token, Routes: func(s *contracttest.Env) map[string]http.Handler {
		return Routes(Options{LogsRoot: s.LogsRoot, Variant: s.Variant, Snapshot: func(context.Context) api.Health {
			return api.Health{TS: 42, Hostname: "h"}
		}})
	}})
	return &env{url: s.URL, logs: s.LogsRoot}
}

func (e *env) get(t *testing.T, path string, rng string) (*http.Response, string) {
	t.Helper()
	header := http.Header{}
	if rng != "" {
		header.Set("Range", rng)
	}
	return e.getWith(t, path, header)
}

// getWith GETs path with the token and header.
func (e *env) getWith(t *testing.T, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.url+path, nil)
	req.Header = header
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// plantAll plants pairs of a path under root and its content, with the
// time of planting.
func plantAll(t *testing.T, root string, pathsAndBodies ...string) {
	t.Helper()
	for i := 0; i+1 < len(pathsAndBodies); i += 2 {
		plant(t, root, pathsAndBodies[i], pathsAndBodies[i+1], time.Time{})
	}
}

// wantListing fails unless route answers the JSON want.
func (e *env) wantListing(t *testing.T, route, want string) {
	t.Helper()
	if _, body := e.get(t, route, ""); strings.TrimSpace(body) != want {
		t.Fatalf("%s listing\n%s\nwant\n%s", route, body, want)
	}
}

func TestListings(t *testing.T) {
	e := start(t, api.Variant1)
	base := time.UnixMilli(1790000000000)
	plant(t, e.logs, "web-logs/access.log", "active\n", time.Time{})
	plant(t, e.logs, "web-logs/access-2026-01-02T03-04-05.000.log", "second\n", base.Add(time.Hour))
	plant(t, e.logs, "web-logs/access-zzz.log", "first\n", base) // names are never parsed
	plant(t, e.logs, "web-logs/access-same-a.log", "a\n", base.Add(2*time.Hour))
	plant(t, e.logs, "web-logs/access-same-b.log", "bb\n", base.Add(2*time.Hour))
	plant(t, e.logs, "web-logs/other.log", "no", time.Time{})
	plant(t, e.logs, "web-logs/access-old.log.gz", "no", time.Time{})
	os.Symlink("/etc/passwd", filepath.Join(e.logs, "web-logs/access-link.log"))

	e.wantListing(t, "/api/v1/logs", `{"active":{"size":7},"rotated":[{"ts":1790000000000,"size":6},{"ts":1790003600000,"size":7},{"ts":1790007200000,"size":2},{"ts":1790007200001,"size":3}]}`)
	if _, b := e.get(t, "/api/v1/logs/file?which=1790000000000", ""); b != "first\n" {
		t.Fatalf("rotated by ts: %q", b)
	}
	if _, b := e.get(t, "/api/v1/logs/file?which=1790007200001", ""); b != "bb\n" {
		t.Fatalf("same-ms file: %q", b)
	}

	plantAll(t, e.logs, "server-logs/cpu-2026-11-21.log", "c1\n", "server-logs/memory-2026-11-22.log", "m\n",
		"server-logs/cpu-2026-13-40.log", "bad date", "server-logs/gpu-2026-11-21.log", "unknown type")
	e.wantListing(t, "/api/v1/stats", `{"interval":15000,"files":[{"name":"cpu-2026-11-21.log","type":"cpu","date":"2026-11-21","size":3},{"name":"memory-2026-11-22.log","type":"memory","date":"2026-11-22","size":2}]}`)
	if _, b := e.get(t, "/api/v1/stats/now", ""); !strings.Contains(b, `"hostname":"h"`) {
		t.Fatalf("stats/now: %s", b)
	}

	plantAll(t, e.logs,
		"hoster-logs/b.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", "{}\n",
		"hoster-logs/a.com/g/hoster-processes/0123456789ab/snapshot-2026-11-22-10.jsonl", "{}\n{}\n",
		"hoster-logs/a.com/g/hoster-processes/NOTHEX/stats-2026-11-22-10.jsonl", "x",
		"hoster-logs/a.com/g/elsewhere/0123456789ab/stats-2026-11-22-10.jsonl", "x")
	e.wantListing(t, "/api/v1/gamelogs", `{"files":[{"path":"a.com/g/hoster-processes/0123456789ab/snapshot-2026-11-22-10.jsonl","size":6},{"path":"b.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl","size":3}]}`)
}

func TestEmptyListings(t *testing.T) {
	e := start(t, api.Variant1)
	for path, want := range map[string]string{
		"/api/v1/logs":     `{"active":null,"rotated":[]}`,
		"/api/v1/stats":    `{"interval":15000,"files":[]}`,
		"/api/v1/gamelogs": `{"files":[]}`,
	} {
		if _, b := e.get(t, path, ""); strings.TrimSpace(b) != want {
			t.Errorf("%s = %s, want %s", path, b, want)
		}
	}
}

func TestFileStreaming(t *testing.T) {
	e := start(t, api.Variant1)
	plant(t, e.logs, "web-logs/access.log", "0123456789", time.Time{})
	plant(t, e.logs, "server-logs/cpu-2026-11-21.log", "0123456789", time.Time{})
	plant(t, e.logs, "hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", "0123456789", time.Time{})
	for _, path := range []string{
		"/api/v1/logs/file?which=active",
		"/api/v1/stats/file?name=cpu-2026-11-21.log",
		"/api/v1/gamelogs/file?path=" + url.QueryEscape("a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl"),
	} {
		for _, tc := range []struct {
			rng, body, contentRange string
			status                  int
		}{
			{"", "0123456789", "", 200},
			{"bytes=0-", "0123456789", "bytes 0-9/10", 206},
			{"bytes=4-", "456789", "bytes 4-9/10", 206},
			{"bytes=9-", "9", "bytes 9-9/10", 206},
			{"bytes=10-", "", "", 200},                   // at the end: empty 200
			{"bytes=99-", "", "", 200},                   // past the end: empty 200
			{"bytes=99999999999999999999-", "", "", 200}, // past any int64: past the end too
			{"bytes=2-4", "0123456789", "", 200},
			{"bytes=-3", "0123456789", "", 200},
			{"items=2-", "0123456789", "", 200},
			{"bytes=0-1,4-", "0123456789", "", 200}, // several ranges: the whole file, never multipart
			{"bytes=4-,", "0123456789", "", 200},
		} {
			resp, body := e.get(t, path, tc.rng)
			if resp.StatusCode != tc.status || body != tc.body || resp.Header.Get("Content-Range") != tc.contentRange ||
				resp.Header.Get("Content-Length") != fmt.Sprint(len(tc.body)) {
				t.Errorf("%s Range %q: %d %q %q", path, tc.rng, resp.StatusCode, body, resp.Header.Get("Content-Range"))
			}
			if resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("Accept-Ranges") != "bytes" {
				t.Errorf("%s: headers %v", path, resp.Header)
			}
		}
	}
	// Absent files and unknown names: empty 200.
	for _, path := range []string{
		"/api/v1/logs/file?which=123", "/api/v1/logs/file?which=", "/api/v1/logs/file?which=../../etc/passwd",
		"/api/v1/stats/file?name=cpu-2026-11-20.log", "/api/v1/stats/file?name=../hoster-token",
		"/api/v1/stats/file?name=", "/api/v1/stats/file?name=gpu-2026-11-21.log",
	} {
		resp, body := e.get(t, path, "")
		if resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Length") != "0" {
			t.Errorf("%s: %d %q", path, resp.StatusCode, body)
		}
	}
}

func TestTraversalAndSymlinks(t *testing.T) {
	e := start(t, api.Variant1)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644)
	os.MkdirAll(filepath.Join(e.logs, "hoster-logs/a.com/g/hoster-processes"), 0o755)
	os.Symlink(outside, filepath.Join(e.logs, "hoster-logs/a.com/g/hoster-processes/0123456789ab"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(outside, "stats-2026-11-22-10.jsonl"))
	os.MkdirAll(filepath.Join(e.logs, "web-logs"), 0o755)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(e.logs, "web-logs/access.log"))
	os.MkdirAll(filepath.Join(e.logs, "server-logs"), 0o755)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(e.logs, "server-logs/cpu-2026-11-21.log"))

	for _, path := range []string{
		"a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", // through a symlinked dir
		"../../etc/passwd", "/etc/passwd", "a.com/g/hoster-processes/0123456789ab/../../../../x",
		"a.com/../hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", "a.com/g\x00/x", "a.com\\g",
	} {
		_, body := e.get(t, "/api/v1/gamelogs/file?path="+url.QueryEscape(path), "")
		if strings.Contains(body, "SECRET") {
			t.Errorf("gamelogs/file?path=%q leaked a file outside the root", path)
		}
	}
	resp, body := e.get(t, "/api/v1/gamelogs/file?path="+url.QueryEscape("../x"), "")
	if resp.StatusCode != 400 || !strings.Contains(body, "invalid path") {
		t.Errorf("a path outside the layout: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/api/v1/logs/file?which=active", "/api/v1/stats/file?name=cpu-2026-11-21.log"} {
		if _, body := e.get(t, path, ""); strings.Contains(body, "SECRET") {
			t.Errorf("%s followed a symlink out of the logs root", path)
		}
	}
	_, body = e.get(t, "/api/v1/gamelogs", "")
	if strings.Contains(body, "stats-2026") {
		t.Errorf("the listing followed a symlink: %s", body)
	}
}

// The answers the contract leaves alone: an empty file has no range to
// serve, and no
// conditional header turns a file into a 304 or a 412, nor its Range off.
func TestFileStreamingEdges(t *testing.T) {
	e := start(t, api.Variant1)
	plant(t, e.logs, "web-logs/access.log", "0123456789", time.Time{})
	plant(t, e.logs, "server-logs/cpu-2026-11-21.log", "", time.Time{})
	const active = "/api/v1/logs/file?which=active"
	for _, tc := range []struct {
		name, path   string
		header       http.Header
		status       int
		length, body string
	}{
		{"an empty file", "/api/v1/stats/file?name=cpu-2026-11-21.log", http.Header{}, 200, "0", ""},
		{"an empty file from 0", "/api/v1/stats/file?name=cpu-2026-11-21.log", http.Header{"Range": {"bytes=0-"}}, 200, "0", ""},
		{"If-None-Match *", active, http.Header{"If-None-Match": {"*"}}, 200, "10", "0123456789"},
		{"If-Match", active, http.Header{"If-Match": {`"x"`}}, 200, "10", "0123456789"},
		{"If-Modified-Since", active, http.Header{"If-Modified-Since": {time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}, 200, "10", "0123456789"},
		{"If-Range", active, http.Header{"Range": {"bytes=4-"}, "If-Range": {`"x"`}}, 206, "6", "456789"},
	} {
		resp, body := e.getWith(t, tc.path, tc.header)
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Length") != tc.length || body != tc.body ||
			resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("Accept-Ranges") != "bytes" {
			t.Errorf("%s: %d %q %v, want %d %q with Content-Length %s", tc.name, resp.StatusCode, body, resp.Header, tc.status, tc.body, tc.length)
		}
	}
}

// A file growing while it is sent is sent up to the size it had when opened.
func TestGrowthDuringSend(t *testing.T) {
	logs := t.TempDir()
	plant(t, logs, "web-logs/access.log", strings.Repeat("a", 4<<20), time.Time{})
	h := Routes(Options{LogsRoot: logs})["GET /api/v1/logs/file"]
	pr, pw := io.Pipe()
	rec := &slowWriter{header: http.Header{}, w: pw}
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/logs/file?which=active", nil))
		pw.Close()
		close(done)
	}()
	// Read a little, then grow the file, then read the rest.
	buf := make([]byte, 1024)
	io.ReadFull(pr, buf)
	f, _ := os.OpenFile(filepath.Join(logs, "web-logs/access.log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(strings.Repeat("b", 1<<20))
	f.Close()
	rest, _ := io.ReadAll(pr)
	<-done
	got := int64(len(buf) + len(rest))
	if cl := rec.header.Get("Content-Length"); cl != fmt.Sprint(4<<20) || got != 4<<20 || strings.Contains(string(rest), "b") {
		t.Fatalf("sent %d bytes with Content-Length %s; want exactly the %d bytes present at open", got, cl, 4<<20)
	}
}

type slowWriter struct {
	header http.Header
	w      io.Writer
	status int
}

func (s *slowWriter) Header() http.Header         { return s.header }
func (s *slowWriter) WriteHeader(code int)        { s.status = code }
func (s *slowWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

func TestVariant2HasNoGameLogs(t *testing.T) {
	e := start(t, api.Variant2)
	plant(t, e.logs, "hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", "x", time.Time{})
	r1, b1 := e.get(t, "/api/v1/gamelogs", "")
	r2, b2 := e.get(t, "/api/v1/nothing", "")
	if r1.StatusCode != 404 || b1 != b2 || r2.StatusCode != 404 {
		t.Fatalf("variant 2 gamelogs: %d %q vs unknown %d %q", r1.StatusCode, b1, r2.StatusCode, b2)
	}
	if r, _ := e.get(t, "/api/v2/logs", ""); r.StatusCode != 404 {
		t.Fatal("a wrong version prefix must be the uniform 404")
	}
	var l api.LogListing
	_, b := e.get(t, "/api/v1/logs", "")
	if json.Unmarshal([]byte(b), &l) != nil {
		t.Fatalf("variant 2 logs listing: %s", b)
	}
}

// The game-log listing is written folder by folder as the folders are
// read, several at once: its files still come sorted by path, as the
// contract says (a folder "a.com" sorts after "a.com-x" as a path's part),
// its strings escaped as encoding/json escapes them, and nothing but the
// layout's regular files in it.
func TestGameLogListingOrder(t *testing.T) {
	e := start(t, api.Variant1)
	var want []api.GameLogFile
	for i, folder := range []string{"a.com", "a.com-x", "a.com.b", "a.co", "é.com", "x<&>\".com", "z.com", "a.com\x01"} {
		for _, game := range []string{"g", "g-2", "g.2", "g 2"} {
			for _, name := range []string{"stats-2026-11-22-10.jsonl", "snapshot-2026-11-22-10.jsonl", "stats-2026-11-22-09.jsonl"} {
				p := folder + "/" + game + "/hoster-processes/0123456789ab/" + name
				plant(t, filepath.Join(e.logs, "hoster-logs"), p, strings.Repeat("x", i), time.Time{})
				want = append(want, api.GameLogFile{Path: p, Size: int64(i)})
			}
		}
	}
	plantAll(t, e.logs,
		"hoster-logs/a.com/g/hoster-processes/0123456789ab/notes.txt", "not an hour file",
		"hoster-logs/a.com/g/hoster-processes/0123456789ab/x/stats-2026-11-22-10.jsonl", "too deep",
		"hoster-logs/a.com/g/stats-2026-11-22-10.jsonl", "too shallow",
		"hoster-logs/_a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-10.jsonl", "not a domain")
	os.Mkdir(filepath.Join(e.logs, "hoster-logs/a.com/g/hoster-processes/0123456789ab/stats-2026-11-22-11.jsonl"), 0o755)
	sort.Slice(want, func(i, j int) bool { return want[i].Path < want[j].Path })
	b, _ := json.Marshal(api.GameLogListing{Files: want})
	e.wantListing(t, "/api/v1/gamelogs", string(b))
}
