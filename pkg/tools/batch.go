package tools

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strconv"
	"sync"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/layout"
)

// maxFetchRequest bounds a batch download's request body: FetchMaxFiles
// game-log paths, the longest names, take under 200 KiB.
const maxFetchRequest = 1 << 20

// files is the batch download, hoster's extension (api.PathFilesBatch): the
// files a FetchRequest names, whole, as one tar stream, entry i named "i"
// and holding the bytes file i had when it was opened, as its own route
// would have sent them (an absent or unknown file is an empty entry, as it
// is an empty 200). A request that is not a FetchRequest, names more than
// api.FetchMaxFiles files, a route other than the three file routes (the
// game logs' only where they are served) or a game-log path not of the
// layout is refused as a whole with a 400. Range tails stay per file.
func (h *handlers) files(w http.ResponseWriter, r *http.Request) {
	var req api.FetchRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxFetchRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "reading the batch download's request: "+err.Error())
		return
	}
	if len(req.Files) > api.FetchMaxFiles {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("a batch download takes at most %d files, not %d", api.FetchMaxFiles, len(req.Files)))
		return
	}
	rotated := sync.OnceValue(h.rotated) // listed once for the request
	refs := make([]*fileRef, len(req.Files))
	for i, f := range req.Files {
		var ok bool
		if refs[i], ok = h.fileOf(f, rotated); !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("file %d of the batch download: not a file of the tools routes", i))
			return
		}
	}
	roots := &rootCache{roots: map[string]*os.Root{}, dirs: map[string]*os.File{}}
	defer roots.close()
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tar.NewWriter(bw)
	buf := make([]byte, 32<<10) // every file's copy, not an allocation each
	for i, ref := range refs {
		if err := writeEntry(tw, strconv.Itoa(i), roots.opener(ref), buf); err != nil {
			h.o.Logger.Warn("sending a batch download", "error", err)
			panic(http.ErrAbortHandler) // the client sees the stream cut, not a short file
		}
	}
	if tw.Close() == nil {
		bw.Flush()
	}
}

// fileOf is the file f's own route would send (nil: none, an empty
// answer); ok is false for a file no route serves.
func (h *handlers) fileOf(f api.FetchFile, rotated func() []rotatedFile) (ref *fileRef, ok bool) {
	switch {
	case f.Route == api.PathLogsFile && f.Name == "" && f.Path == "":
		return h.logFile(f.Which, rotated), true
	case f.Route == api.PathStatsFile && f.Which == "" && f.Path == "":
		return h.statsFileRef(f.Name), true
	case f.Route == api.PathGameLogsFile && f.Which == "" && f.Name == "" && h.o.Variant != api.Variant2 && layout.IsGameLogPath(f.Path):
		return h.gameLogFile(f.Path), true
	}
	return nil, false
}

// rootCache keeps, for one batch download, the os.Root of each folder its
// files are in, opened once (through the os.Root of the route's folder,
// as fileRef.opener opens them one at a time): a batch of one game's hour
// files then costs an open each, not a walk of their path each.
type rootCache struct {
	roots map[string]*os.Root // by fileRef.dir, and by it and a subfolder
	dirs  map[string]*os.File // each root's own folder, for openEntry
}

func (c *rootCache) root(dir, sub string) (*os.Root, error) {
	key := dir + "\x00" + sub
	if r, ok := c.roots[key]; ok {
		return r, nil
	}
	var r *os.Root
	var err error
	if sub == "." {
		r, err = os.OpenRoot(dir)
	} else {
		var base *os.Root
		if base, err = c.root(dir, "."); err == nil {
			r, err = base.OpenRoot(sub)
		}
	}
	if err != nil {
		return nil, err // not kept: every file of a folder not there is absent
	}
	c.roots[key] = r
	return r, nil
}

// opener opens ref through the cache, as a regular file (ok false: none);
// nil for no file.
func (c *rootCache) opener(ref *fileRef) func() (e entry, ok bool) {
	if ref == nil {
		return nil
	}
	return func() (entry, bool) {
		sub := path.Dir(ref.name)
		r, err := c.root(ref.dir, sub)
		if err != nil {
			return entry{}, false
		}
		key := ref.dir + "\x00" + sub
		d, ok := c.dirs[key]
		if !ok {
			d, _ = r.Open(".") // nil: each file through r
			c.dirs[key] = d
		}
		return openEntry(d, r, path.Base(ref.name))
	}
}

func (c *rootCache) close() {
	for _, r := range c.roots {
		r.Close()
	}
	for _, d := range c.dirs {
		if d != nil {
			d.Close()
		}
	}
}

// entry is a regular file a batch download sends, open: its bytes, its
// size when opened, and how it is closed.
type entry struct {
	io.ReaderAt
	size  int64
	close func() error
}

// fileEntry is the entry of f, open, where it is a regular file.
func fileEntry(f *os.File) (entry, bool) {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		return entry{ReaderAt: f, size: fi.Size(), close: f.Close}, true
	}
	f.Close()
	return entry{}, false
}

// openEntryIn opens name inside root as openIn does, as an entry.
func openEntryIn(root *os.Root, name string) (entry, bool) {
	f, err := openIn(root, name)
	if err != nil {
		return entry{}, false
	}
	return fileEntry(f)
}

// writeEntry writes the file open opens as the entry name: the bytes it
// has when opened, or none, copied through buf.
func writeEntry(tw *tar.Writer, name string, open func() (entry, bool), buf []byte) error {
	var e entry
	ok := false
	if open != nil {
		e, ok = open()
	}
	if ok {
		defer e.close()
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Size: e.size, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if !ok {
		return nil
	}
	_, err := io.CopyBuffer(tw, io.NewSectionReader(e, 0, e.size), buf)
	return err
}
