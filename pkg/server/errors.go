package server

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/atomicfile"
	"github.com/hoster-dev/hoster/pkg/notfound"
)

// The Sync API's handlers return their failures; one place, render, writes
// them as the contract's variant wants. The cause goes to the log, a short
// one (never a server file name) to the wire.

// errInvalidPath is an unsafe path: variant 1 answers 400 {"error": "invalid
// path"}, variant 2 the uniform 404.
var errInvalidPath = errors.New(api.ErrInvalidPath)

// opError is a write or a delete that failed.
type opError struct {
	op     string // "write" or "delete"
	status int    // variant 1's status
	msg    string // what the client is told
	code   string // the machine-readable cause the client is told: api.Cause*, or ""
	cause  error  // what the log is told; nil when msg says it all
}

func (e *opError) Error() string {
	if e.cause != nil {
		return e.cause.Error()
	}
	return e.msg
}

// writeFailed is a failed write, told to the client by its short cause.
func writeFailed(status int, cause error) error {
	return &opError{op: "write", status: status, msg: shortCause(cause), code: causeCode(cause), cause: cause}
}

// deleteFailed is a failed delete.
func deleteFailed(cause error) error {
	return &opError{op: "delete", status: http.StatusInternalServerError, msg: shortCause(cause), code: causeCode(cause), cause: cause}
}

// causeCode is the machine-readable cause of a failed write or delete that
// the client is told beside its words (api.CauseNoSpace), or "" for none.
func causeCode(err error) string {
	if errors.Is(err, syscall.ENOSPC) {
		return api.CauseNoSpace
	}
	return ""
}

// shortCause says what went wrong in words a client can act on, without the
// server's paths or temporary names: the system's own message for the error
// (ENOSPC is "no space left on device"), or a plain one.
func shortCause(err error) string {
	// The system's words for what failed, without the path it failed on.
	var msg string
	var errno syscall.Errno
	var pe *os.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.As(err, &errno):
		msg = errno.Error()
	case errors.As(err, &pe):
		msg = pe.Err.Error()
	case errors.As(err, &le):
		msg = le.Err.Error()
	case errors.As(err, &se):
		msg = se.Err.Error()
	case errors.Is(err, atomicfile.ErrNotRegular):
		return "a link or a special file stands where the file would go"
	default:
		return "the server could not write it"
	}
	switch msg {
	case syscall.ENOTDIR.Error(), syscall.EISDIR.Error(), syscall.EEXIST.Error(), syscall.ENOTEMPTY.Error():
		return "a file and a folder of the same name stand in each other's way (" + msg + ")"
	}
	return msg
}

// handle adapts a handler that returns its failure.
func (s *Server) handle(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.render(w, r, err)
		}
	})
}

// render writes a handler's failure in the server's variant of the contract.
func (s *Server) render(w http.ResponseWriter, r *http.Request, err error) {
	v2 := s.opts.Variant == api.Variant2
	var oe *opError
	switch {
	case errors.Is(err, errInvalidPath):
		if v2 {
			notfound.Write(w)
			return
		}
		writeJSON(w, http.StatusBadRequest, api.ErrorBody{Error: api.ErrInvalidPath})
	case errors.As(err, &oe):
		if oe.cause != nil {
			s.log.Warn(oe.op+" failed", "path", pathParam(r), "err", oe.cause)
		}
		switch {
		case !v2:
			writeJSON(w, oe.status, api.ErrorBody{Error: oe.msg, Cause: oe.code})
		case oe.op == "delete":
			writeJSON(w, http.StatusOK, api.DeleteResult{OK: api.Bool(false), Error: oe.msg, Cause: oe.code})
		default:
			writeJSON(w, http.StatusOK, api.WriteResult{OK: api.Bool(false), Error: oe.msg, Cause: oe.code})
		}
	default:
		s.log.Error("answering "+r.Method+" "+r.URL.Path, "err", err)
		writeJSON(w, http.StatusInternalServerError, api.ErrorBody{Error: fmt.Sprintf("%s %s failed", r.Method, r.URL.Path)})
	}
}
