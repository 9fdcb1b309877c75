// Package transfer holds the values the client's two halves pass each other
// when they move files: pkg/mirror decides what to send and fetch, and
// pkg/apiclient, which implements mirror's Remote and LogsRemote over HTTP,
// sends and fetches it. None of them crosses the wire as such (they carry
// functions, errors and open bodies), so they are not the contract's: that is
// pkg/api, which holds only what does. This package imports nothing of the
// module, so that pkg/mirror, which takes interfaces and plain values, never
// links the HTTP client to name them.
package transfer

import "io"

// BatchFile is one file of a batch upload, as a client sends it: its path
// relative to the games root, its size, and how to read it (again, for a
// retry).
type BatchFile struct {
	Rel  string
	Size int64
	Open func() (io.ReadCloser, error)
}

// BatchOutcome is how one file of a batch upload ended, as a client sees
// it: Err is nil when the server wrote exactly its bytes, and SHA256 is
// then their hash as the server reported it ("" when it did not say).
type BatchOutcome struct {
	SHA256 string
	Err    error
}

// Fetched is the answer to a request for one of the tools routes' files,
// its body still to be read.
type Fetched struct {
	// Status is 200 or 206.
	Status int
	// Start is where the body begins in the file: the Content-Range start of
	// a 206, 0 for a 200.
	Start int64
	// Length is the Content-Length, or -1 when unknown.
	Length int64
	// Body must be closed.
	Body io.ReadCloser
}
