// Package tools serves the read-only tools API under /api/v1/: the access-log
// listing and files, the machine-health day-files and live snapshot, and (in
// variant 1) the game-log tree. Authentication and the uniform 404 are
// pkg/server's; these handlers are mounted behind it.
//
// Only three things from a request ever reach the filesystem: a rotated log's
// timestamp (looked up in a fresh listing, never used as a name), a stats
// file name that matches <type>-YYYY-MM-DD.log exactly, and a game-log path
// that matches <domain>/<game>/hoster-processes/<12 hex>/<family>-YYYY-MM-DD-HH.jsonl
// exactly and is opened through an os.Root.
//
// Files are streamed by the contract's rules: Content-Type
// application/octet-stream and Accept-Ranges bytes; "Range: bytes=N-" gives
// 206 with Content-Range; an absent file, an unknown name or N at or past the
// end gives an empty 200. A file that grows while it is sent is sent up to the
// size it had when opened, matching Content-Length. Any other Range form
// (bytes=N-M, suffixes, several ranges) is ignored and the whole file is sent
// with 200, as RFC 9110 allows. The files carry no validators, so no
// conditional header changes an answer. http.ServeContent sends them, as it
// sends the pages (pkg/pages); serveFile keeps the contract's rules in front
// of it.
package tools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// Options configure the tools routes.
type Options struct {
	// LogsRoot is {logs_root}.
	LogsRoot string
	// Variant 2 has no game-log routes.
	Variant api.Variant
	// StatsInterval is reported in the stats listing; 0 means 15 s.
	StatsInterval time.Duration
	// Snapshot takes the live health snapshot; nil answers an empty one.
	Snapshot func(context.Context) api.Health
	// Logger receives failures; nil discards them.
	Logger *slog.Logger
}

// Routes returns the handlers keyed "GET /api/v<N>/...", for
// server.Options.Routes.
func Routes(o Options) map[string]http.Handler {
	if o.StatsInterval <= 0 {
		o.StatsInterval = api.StatsIntervalMS * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handlers{o: o}
	p := func(route string) string { return "GET " + api.ToolsPath(api.Version, route) }
	routes := map[string]http.Handler{
		p(api.PathLogs):      http.HandlerFunc(h.logs),
		p(api.PathLogsFile):  http.HandlerFunc(h.logsFile),
		p(api.PathStats):     http.HandlerFunc(h.stats),
		p(api.PathStatsFile): http.HandlerFunc(h.statsFile),
		p(api.PathStatsNow):  http.HandlerFunc(h.statsNow),
	}
	if o.Variant != api.Variant2 {
		routes[p(api.PathGameLogs)] = http.HandlerFunc(h.gameLogs)
		routes[p(api.PathGameLogsFile)] = http.HandlerFunc(h.gameLogsFile)
	}
	routes["POST "+api.ToolsPath(api.Version, api.PathFilesBatch)] = http.HandlerFunc(h.files)
	return routes
}

type handlers struct{ o Options }

func (h *handlers) webLogs() string { return filepath.Join(h.o.LogsRoot, api.WebLogsDir) }

// rotatedFile is a rotated access log and its key.
type rotatedFile struct {
	name string
	ts   int64 // the key: modification time in ms, made unique
	size int64
}

// rotated lists the rotated access logs: access-*.log files beside
// access.log, keyed by modification time in ms, oldest first. Names are
// never parsed (Caddy's roller and naming have changed across versions).
// Two files with the same ms are ordered by name and the later one is keyed
// one ms later, so every key is unique and stable while the files are.
func (h *handlers) rotated() []rotatedFile {
	entries, err := os.ReadDir(h.webLogs())
	if err != nil {
		return nil
	}
	var files []rotatedFile
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "access-") || !strings.HasSuffix(n, ".log") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, rotatedFile{name: n, ts: info.ModTime().UnixMilli(), size: info.Size()})
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].ts != files[j].ts {
			return files[i].ts < files[j].ts
		}
		return files[i].name < files[j].name
	})
	for i := 1; i < len(files); i++ {
		if files[i].ts <= files[i-1].ts {
			files[i].ts = files[i-1].ts + 1
		}
	}
	return files
}

func (h *handlers) logs(w http.ResponseWriter, r *http.Request) {
	l := api.LogListing{Rotated: []api.RotatedLog{}}
	if fi, err := os.Stat(filepath.Join(h.webLogs(), api.AccessLogName)); err == nil && fi.Mode().IsRegular() {
		l.Active = &api.ActiveLog{Size: fi.Size()}
	}
	for _, f := range h.rotated() {
		l.Rotated = append(l.Rotated, api.RotatedLog{TS: f.ts, Size: f.size})
	}
	writeJSON(w, l)
}

func (h *handlers) logsFile(w http.ResponseWriter, r *http.Request) {
	serveFile(w, r, h.logFile(r.URL.Query().Get(api.QueryWhich), h.rotated).opener())
}

// logFile is the access log which names: "active", or a rotated log's
// key as rotated lists them; nil for any other.
func (h *handlers) logFile(which string, rotated func() []rotatedFile) *fileRef {
	if which == api.WhichActive {
		return &fileRef{h.webLogs(), api.AccessLogName}
	}
	if ts, err := strconv.ParseInt(which, 10, 64); err == nil {
		for _, f := range rotated() {
			if f.ts == ts {
				return &fileRef{h.webLogs(), f.name}
			}
		}
	}
	return nil // unknown: empty 200
}

func (h *handlers) stats(w http.ResponseWriter, r *http.Request) {
	l := api.StatsListing{Interval: h.o.StatsInterval.Milliseconds(), Files: []api.StatsFile{}}
	entries, _ := os.ReadDir(filepath.Join(h.o.LogsRoot, api.ServerLogsDir))
	for _, e := range entries { // ReadDir sorts by name
		typ, day, ok := layout.ParseStatsFileName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil {
			l.Files = append(l.Files, api.StatsFile{Name: e.Name(), Type: typ, Date: day.Format(time.DateOnly), Size: info.Size()})
		}
	}
	writeJSON(w, l)
}

func (h *handlers) statsFile(w http.ResponseWriter, r *http.Request) {
	serveFile(w, r, h.statsFileRef(r.URL.Query().Get(api.QueryName)).opener())
}

// statsFileRef is the day-file name names; nil for a name not of the
// day-files' shape.
func (h *handlers) statsFileRef(name string) *fileRef {
	if _, _, ok := layout.ParseStatsFileName(name); !ok {
		return nil
	}
	return &fileRef{filepath.Join(h.o.LogsRoot, api.ServerLogsDir), name}
}

func (h *handlers) statsNow(w http.ResponseWriter, r *http.Request) {
	snap := api.Health{TS: time.Now().Unix()}
	if h.o.Snapshot != nil {
		snap = h.o.Snapshot(r.Context())
	}
	writeJSON(w, snap)
}

func (h *handlers) gameLogsRoot() (*os.Root, error) {
	return os.OpenRoot(filepath.Join(h.o.LogsRoot, api.GameLogsDir))
}

func (h *handlers) gameLogsFile(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get(api.QueryPath)
	if !layout.IsGameLogPath(p) {
		writeError(w, http.StatusBadRequest, api.ErrInvalidPath)
		return
	}
	serveFile(w, r, h.gameLogFile(p).opener())
}

// gameLogFile is the game-log file at p, a layout.IsGameLogPath.
func (h *handlers) gameLogFile(p string) *fileRef {
	return &fileRef{filepath.Join(h.o.LogsRoot, api.GameLogsDir), p}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(api.ErrorBody{Error: msg})
}

// fileRef is a file of the tools routes: name (slash-separated) inside
// the folder dir, opened through an os.Root of dir, so no symlink planted
// in a logs folder can lead outside it.
type fileRef struct{ dir, name string }

// opener opens the file; nil for no file.
func (f *fileRef) opener() func() (*os.File, error) {
	if f == nil {
		return nil
	}
	return func() (*os.File, error) {
		root, err := os.OpenRoot(f.dir)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		return openIn(root, f.name)
	}
}

// openIn opens name inside root to read it. O_NONBLOCK: a fifo planted
// where a log file goes opens at once (and is then no regular file, an
// empty answer) rather than hanging the request until a writer comes; and
// Go, which clears the flag on the files it opens without it, makes two
// syscalls fewer an open (a batch download opens a thousand).
func openIn(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// serveFile streams a file by the contract's rules; open == nil, or a file
// that cannot be opened as a regular file, is an empty 200. The answer is
// http.ServeContent's over the bytes present at open, with only what the
// contract asks of it: the one Range form it names, and no validators (so
// no conditional request changes the answer).
func serveFile(w http.ResponseWriter, r *http.Request, open func() (*os.File, error)) {
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Accept-Ranges", "bytes")
	f, size := openRegular(open)
	if f == nil {
		emptyFile(w)
		return
	}
	defer f.Close()
	start, ranged := rangeFrom(r.Header.Get("Range"))
	if ranged && start >= size {
		emptyFile(w) // the contract's tail rule: at or past the end is an empty 200, not a 416
		return
	}
	rr := r.WithContext(r.Context())
	rr.Header = http.Header{}
	if ranged {
		rr.Header.Set("Range", "bytes="+strconv.FormatInt(start, 10)+"-")
	}
	http.ServeContent(w, rr, "", time.Time{}, io.NewSectionReader(f, 0, size))
}

// openRegular opens a regular file and tells its size at open; nil when
// there is none.
func openRegular(open func() (*os.File, error)) (*os.File, int64) {
	if open == nil {
		return nil, 0
	}
	fh, err := open()
	if err != nil {
		return nil, 0
	}
	if fi, err := fh.Stat(); err == nil && fi.Mode().IsRegular() {
		return fh, fi.Size()
	}
	fh.Close()
	return nil, 0
}

// emptyFile is the contract's empty 200: an absent file, an unknown name, a
// Range at or past the end.
func emptyFile(w http.ResponseWriter) {
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

// rangeStartForm is "bytes=N-", the contract's one Range form.
var rangeStartForm = regexp.MustCompile(`^bytes=(\d+)-$`)

// rangeFrom reads a "Range: bytes=N-" header: N, and whether the header has
// that form. Any other form (bytes=N-M, a suffix, several ranges, another
// unit) is ignored and the whole file sent, as RFC 9110 allows. An N too
// big for an int64 is past the end of any file.
func rangeFrom(h string) (int64, bool) {
	m := rangeStartForm.FindStringSubmatch(h)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return math.MaxInt64, true
	}
	return n, true
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(http.StatusOK)
	w.Write(append(b, '\n'))
}
