package tools

import (
	"archive/tar"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"

	"github.com/hoster-dev/hoster/pkg/api"
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
	opens := make([]func() (*os.File, error), len(req.Files))
	for i, f := range req.Files {
		var ok bool
		if opens[i], ok = h.opener(f, rotated); !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("file %d of the batch download: not a file of the tools routes", i))
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	tw := tar.NewWriter(bw)
	for i, open := range opens {
		if err := writeEntry(tw, strconv.Itoa(i), open); err != nil {
			h.o.Logger.Warn("sending a batch download", "error", err)
			panic(http.ErrAbortHandler) // the client sees the stream cut, not a short file
		}
	}
	if tw.Close() == nil {
		bw.Flush()
	}
}

// opener is how f's own route opens it; ok is false for a file no route
// serves.
func (h *handlers) opener(f api.FetchFile, rotated func() []rotatedFile) (open func() (*os.File, error), ok bool) {
	switch {
	case f.Route == api.PathLogsFile && f.Name == "" && f.Path == "":
		return h.logOpener(f.Which, rotated), true
	case f.Route == api.PathStatsFile && f.Which == "" && f.Path == "":
		return h.statsOpener(f.Name), true
	case f.Route == api.PathGameLogsFile && f.Which == "" && f.Name == "" && h.o.Variant != api.Variant2 && ValidGameLogPath(f.Path):
		return h.gameLogOpener(f.Path), true
	}
	return nil, false
}

// writeEntry writes the file open opens as the entry name: the bytes it
// has when opened, or none.
func writeEntry(tw *tar.Writer, name string, open func() (*os.File, error)) error {
	f, size := openRegular(open)
	if f != nil {
		defer f.Close()
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Size: size, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if f == nil {
		return nil
	}
	_, err := io.Copy(tw, io.NewSectionReader(f, 0, size))
	return err
}
