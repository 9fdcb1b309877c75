package server

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/store"
)

// The bounds of one batch upload, offered in /api/version so that a client
// splits its batches to fit. Each bounds what one request can make the
// server do or hold: the answer lists every file with its name (about 150
// bytes and the name), and so does the server's memory until it answers.
const (
	// BatchMaxFiles is the most files a batch may carry. A sync sends 128
	// at most but in its last batch, which holds the code files of every
	// game (two each): 10,000 is room for 5,000 games, and an answer of at
	// most about 1.5 MB without the names.
	BatchMaxFiles = 10_000
	// BatchMaxNameBytes is the most bytes a batch's file names may add up
	// to: an average of 100 a file at the full count (a game's paths are
	// seldom half as long), and at most 1 MiB of names in the answer.
	BatchMaxNameBytes = 1 << 20
)

// batchMaxBytes is the longest tar stream a batch may be: twice the upload
// limit (1 GiB by default), and at least the limit and 1 MiB, so that a
// file at the limit fits in a batch of its own, whatever its headers, while
// what one request writes stays bounded.
func (s *Server) batchMaxBytes() int64 {
	return max(2*s.opts.MaxUpload, s.opts.MaxUpload+BatchMaxNameBytes)
}

// errBatchTooLong is a batch's body going past batchMaxBytes.
var errBatchTooLong = errors.New("the batch is longer than the server's bound")

// putFiles is the batch upload, hoster's extension beyond the contract
// (offered in /api/version as batchUpload, with its bounds): the body is a
// tar stream of regular files named by their path under the games root,
// each written exactly as PUT /api/file writes one (the same path rules, the
// same atomic write and cached hash), one after the other. The answer lists
// each file's result in order, in both variants, with the sha256 of what was
// written (so a client need not hash what it sends to check the tree
// afterwards), and with tree=1 the tree as it stands after the batch (so the
// check after a sync needs no request of its own).
//
// A body that is not a tar stream, an entry that is not a regular file (a
// link, a folder, a device, a sparse file: nothing a client of ours sends),
// and a batch over one of its bounds fail the request as a failed write
// does, at once: the entry at fault writes nothing and nothing after it is
// read; the files before it are written. The games a batch changes reload
// once, after it ends, however long its body stalls on the way.
func (s *Server) putFiles(w http.ResponseWriter, r *http.Request) error {
	changed := s.debouncer.Batch()
	defer changed.Release()
	held := s.holds()
	defer held.release()
	res, err := s.readBatch(w, r, changed, held)
	if perr := s.publish("write", batchChanges(res)); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		// Whatever is left of the body is not read: the answer goes now,
		// and the connection closes after it.
		w.Header().Set("Connection", "close")
		http.NewResponseController(w).SetReadDeadline(time.Now())
		return err
	}
	if r.URL.Query().Get(api.QueryTree) == "1" {
		// Without it the client reads the tree itself, and hears why.
		if tree, err := s.gamesTree(); err == nil {
			res.Tree = (*api.Tree)(&tree)
		} else {
			s.log.Warn("the tree after a batch", "err", err)
		}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// batchChanges are the files a batch wrote.
func batchChanges(res api.BatchResult) []store.Change {
	var ch []store.Change
	for _, f := range res.Files {
		if f.Error == "" {
			ch = append(ch, store.Change{Path: f.Path, SHA256: f.SHA256})
		}
	}
	return ch
}

// readBatch writes the files of a batch's body, marking their games
// changed in changed, and returns their results; it stops at the first
// failure of the batch as a whole.
func (s *Server) readBatch(w http.ResponseWriter, r *http.Request, changed marker, held *held) (api.BatchResult, error) {
	res := api.BatchResult{Files: []api.BatchFileResult{}}
	limit := s.batchMaxBytes()
	tooLong := batchRefused(http.StatusRequestEntityTooLarge, fmt.Sprintf("it is longer than the server's bound of %d bytes", limit))
	if r.ContentLength > limit {
		return res, tooLong
	}
	// A stalled batch is cut off as a stalled single upload is.
	body := &boundedBody{r: &movingBody{r: r.Body, rc: http.NewResponseController(w), stall: s.opts.BodyStall}, left: limit}
	tr := tar.NewReader(body)
	var names int64
	for {
		h, err := tr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return res, nil
		case errors.Is(err, errBatchTooLong):
			return res, tooLong
		case err != nil:
			return res, batchRefused(http.StatusBadRequest, err.Error())
		}
		names += int64(len(h.Name))
		if err := checkEntry(h, len(res.Files), names); err != nil {
			return res, err
		}
		res.Files = append(res.Files, s.putEntry(h, tr, changed, held))
	}
}

// batchRefused is a batch failed as a whole: variant 1 answers status with
// {"error": msg}, variant 2 200 with {"ok": false, "error": msg}.
func batchRefused(status int, msg string) error {
	return &opError{op: "write", status: status, msg: "reading the batch: " + msg}
}

// checkEntry refuses the header h of a batch's entry i (from 0) before
// anything of it is written: past the bounds on files and on names (names
// is the length of every name so far, h's included), or not a regular
// file.
func checkEntry(h *tar.Header, i int, names int64) error {
	switch {
	case i >= BatchMaxFiles:
		return batchRefused(http.StatusBadRequest, fmt.Sprintf("it has more than %d files, the server's bound", BatchMaxFiles))
	case names > BatchMaxNameBytes:
		return batchRefused(http.StatusBadRequest, fmt.Sprintf("its file names add up to more than %d bytes, the server's bound", BatchMaxNameBytes))
	}
	if kind := entryKind(h); kind != "" {
		return batchRefused(http.StatusBadRequest, fmt.Sprintf("file %d (%.200q) is %s: a batch takes regular files only", i+1, h.Name, kind))
	}
	return nil
}

// entryKind says what h is when it is not a regular file: a batch takes
// nothing else. A sparse file (GNU's, old style or in PAX records) would
// write far more than its entry carries.
func entryKind(h *tar.Header) string {
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return "a sparse file"
		}
	}
	switch h.Typeflag {
	case tar.TypeReg:
		return ""
	case tar.TypeGNUSparse:
		return "a sparse file"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeDir:
		return "a folder"
	case tar.TypeChar, tar.TypeBlock:
		return "a device"
	case tar.TypeFifo:
		return "a named pipe"
	}
	return fmt.Sprintf("of tar type %q", h.Typeflag)
}

// putEntry writes one file of a batch, holding its game in held, and marks
// its game changed in changed.
func (s *Server) putEntry(h *tar.Header, body io.Reader, changed marker, held *held) api.BatchFileResult {
	rel := h.Name
	out := api.BatchFileResult{Path: rel}
	if _, err := store.CleanPath(rel); err != nil || strings.Count(rel, "/")+1 < store.MinWriteDepth {
		out.Error = api.ErrInvalidPath
		return out
	}
	if h.Size > s.opts.MaxUpload {
		out.Error = fmt.Sprintf("upload exceeds the server's limit of %d bytes", s.opts.MaxUpload)
		return out
	}
	held.take(rel)
	wr, err := s.store.Write(rel, body, s.opts.MaxUpload)
	switch {
	case errors.Is(err, store.ErrInvalidPath):
		out.Error = api.ErrInvalidPath
		return out
	case err != nil:
		s.log.Warn("write failed", "path", rel, "err", err)
		out.Error, out.Cause = shortCause(err), causeCode(err)
		return out
	}
	markChanged(changed, rel)
	out.Size, out.SHA256 = wr.Size, wr.SHA256
	return out
}

// boundedBody reads a batch's body up to left bytes, and fails with
// errBatchTooLong past them.
type boundedBody struct {
	r    io.Reader
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: the body must end here.
		var one [1]byte
		if n, err := b.r.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, errBatchTooLong
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
