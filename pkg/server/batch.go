package server

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/store"
)

// putFiles is the batch upload, hoster's extension beyond the contract
// (offered in /api/version as batchUpload): the body is a tar stream of
// regular files named by their path under the games root, each written
// exactly as PUT /api/file writes one (the same path rules, the same atomic
// write and cached hash, the same debounced reload), one after the other.
// The answer lists each file's result in order, in both variants, with the
// sha256 of what was written (so a client need not hash what it sends to
// check the tree afterwards), and with tree=1 the tree as it stands after
// the batch (so the check after a sync needs no request of its own); a body
// that is not a tar stream fails the request as a failed write does, after
// the files before the damage were written.
func (s *Server) putFiles(w http.ResponseWriter, r *http.Request) error {
	// A stalled batch is cut off as a stalled single upload is.
	tr := tar.NewReader(&movingBody{r: r.Body, rc: http.NewResponseController(w), stall: s.opts.BodyStall})
	res := api.BatchResult{Files: []api.BatchFileResult{}}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return &opError{op: "write", status: http.StatusBadRequest, msg: "reading the batch: " + err.Error()}
		}
		res.Files = append(res.Files, s.putEntry(h, tr))
	}
	if r.URL.Query().Get(api.QueryTree) == "1" {
		// Without it the client reads the tree itself, and hears why.
		if tree, err := s.store.Tree(); err == nil {
			res.Tree = (*api.Tree)(&tree)
		} else {
			s.log.Warn("the tree after a batch", "err", err)
		}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// putEntry writes one file of a batch.
func (s *Server) putEntry(h *tar.Header, body io.Reader) api.BatchFileResult {
	rel := h.Name
	out := api.BatchFileResult{Path: rel}
	if _, err := store.CleanPath(rel); err != nil || strings.Count(rel, "/")+1 < store.MinWriteDepth {
		out.Error = api.ErrInvalidPath
		return out
	}
	if h.Typeflag != tar.TypeReg {
		out.Error = "not a regular file"
		return out
	}
	if h.Size > s.opts.MaxUpload {
		out.Error = fmt.Sprintf("upload exceeds the server's limit of %d bytes", s.opts.MaxUpload)
		return out
	}
	wr, err := s.store.Write(rel, body, s.opts.MaxUpload)
	switch {
	case errors.Is(err, store.ErrInvalidPath):
		out.Error = api.ErrInvalidPath
		return out
	case err != nil:
		s.log.Warn("write failed", "path", rel, "err", err)
		out.Error = shortCause(err)
		return out
	}
	s.markChanged(rel)
	out.Size, out.SHA256 = wr.Size, wr.SHA256
	return out
}
