// Package notfound writes the server's uniform 404: one status, one set of
// headers and one body for everything the server does not answer, so that a
// probe cannot tell a missing or wrong token, an unknown route, a wrong API
// version prefix, an unsafe path (variant 2) and a game file that is not
// served apart. The Sync API (pkg/server) and the pages (pkg/pages) both
// answer with it; it is a package of its own so that neither imports the
// other for it.
package notfound

import (
	"io"
	"net/http"
	"strconv"
)

// Body is the uniform 404's body.
const Body = "404 page not found\n"

// Write answers w with the uniform 404, dropping any header set before.
func Write(w http.ResponseWriter) { write(w, false) }

// WriteClosing is Write with "Connection: close": for a request whose body
// the server will not read.
func WriteClosing(w http.ResponseWriter) { write(w, true) }

func write(w http.ResponseWriter, closeConn bool) {
	h := w.Header()
	for k := range h {
		delete(h, k)
	}
	if closeConn {
		h.Set("Connection", "close")
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(Body)))
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, Body)
}
