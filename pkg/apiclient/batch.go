package apiclient

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/transfer"
)

// batchBounds are the bounds on one batch upload a server offers in
// /api/version; 0 is a bound it did not tell (a server from before them).
type batchBounds struct {
	files        int
	bytes, names int64
}

// PutFiles uploads files with the batch upload extension (PathFiles; only
// where CanBatch): in one request, or, where they do not fit in the bounds
// the server offered, in as many as they take, one after the other, in
// their order (a file that fits in no batch goes in one of its own, for
// the server to say why it refuses it). It returns one outcome per file
// (written, exactly Size bytes, with the hash the server reports; or why
// not), or an error for them all when a request failed as a whole (the
// files of the requests before it may then be written). With tree set it
// asks, in the last request, for the server's tree as it stands after the
// batch, and returns it where the server sent it (nil where not).
func (c *Client) PutFiles(ctx context.Context, files []transfer.BatchFile, tree bool) ([]transfer.BatchOutcome, api.Tree, error) {
	c.mu.Lock()
	bounds := c.bounds
	c.mu.Unlock()
	parts, err := splitBatch(files, bounds)
	if err != nil {
		return nil, nil, &Error{Op: fmt.Sprintf("uploading %d files at once", len(files)), Msg: err.Error()}
	}
	out := make([]transfer.BatchOutcome, 0, len(files))
	var after api.Tree
	for i, part := range parts {
		o, t, err := c.putBatch(ctx, part, tree && i == len(parts)-1)
		if err != nil {
			return nil, nil, err
		}
		out, after = append(out, o...), t
	}
	return out, after, nil
}

// splitBatch splits files, in their order, into batches within b.
func splitBatch(files []transfer.BatchFile, b batchBounds) ([][]transfer.BatchFile, error) {
	var parts [][]transfer.BatchFile
	var cur []transfer.BatchFile
	var bytes, names int64 = tarEnd, 0
	for _, f := range files {
		n, err := tarEntrySize(f)
		if err != nil {
			return nil, err
		}
		over := b.files > 0 && len(cur)+1 > b.files ||
			b.bytes > 0 && bytes+n > b.bytes ||
			b.names > 0 && names+int64(len(f.Rel)) > b.names
		if over && len(cur) > 0 {
			parts = append(parts, cur)
			cur, bytes, names = nil, tarEnd, 0
		}
		cur = append(cur, f)
		bytes += n
		names += int64(len(f.Rel))
	}
	if len(cur) > 0 || len(parts) == 0 {
		parts = append(parts, cur)
	}
	return parts, nil
}

// putBatch uploads files in one request, the batch upload extension
// (PathFiles). The body is a tar stream made as it is sent, each file read
// from Open, with its length told up front; a retried batch is sent again
// whole. It returns one outcome per file (written, exactly Size bytes, with
// the hash the server reports; or why not), or an error for the whole
// batch when the request itself failed. With tree set it asks for the
// server's tree as it stands after the batch, and returns it where the
// server sent it (nil where not).
func (c *Client) putBatch(ctx context.Context, files []transfer.BatchFile, tree bool) ([]transfer.BatchOutcome, api.Tree, error) {
	op := fmt.Sprintf("uploading %d files at once", len(files))
	out := make([]transfer.BatchOutcome, len(files))
	size, err := tarSize(files)
	if err != nil {
		return nil, nil, &Error{Op: op, Msg: err.Error()}
	}
	var after api.Tree
	tarBody := func() (body, error) {
		pr, pw := io.Pipe()
		wrote := make(chan error, 1)
		go func() {
			err := writeTar(pw, files)
			pw.CloseWithError(err)
			wrote <- err
		}()
		return body{r: pr, size: size, done: func() error {
			pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the answer came early
			var le *localError
			if errors.As(<-wrote, &le) {
				return &Error{Op: op, Msg: le.Error()} // not the link's fault: not retried
			}
			return nil
		}}, nil
	}
	k := call{op: op, method: http.MethodPut, path: api.PathFiles, contentType: "application/x-tar", open: tarBody, upload: true}
	if tree {
		k.query = url.Values{api.QueryTree: {"1"}}
	}
	err = c.do(ctx, k, func(_ *http.Response, answer []byte) error {
		var res api.BatchResult
		var fail api.WriteResult // variant 2's answer to a request that failed as a whole
		if json.Unmarshal(answer, &fail) == nil && fail.OK != nil && !*fail.OK {
			return &Error{Op: op, Msg: "the server could not write them: " + fail.Error, Reason: fail.Cause}
		}
		if err := json.Unmarshal(answer, &res); err != nil || len(res.Files) != len(files) {
			return &Error{Op: op, Msg: fmt.Sprintf("the answer is not a result for each of the %d files", len(files))}
		}
		for i, r := range res.Files {
			o := transfer.BatchOutcome{SHA256: r.SHA256}
			switch {
			case r.Path != files[i].Rel:
				o = transfer.BatchOutcome{Err: &Error{Op: "uploading " + files[i].Rel, Msg: "the server answered for " + r.Path}}
			case r.Error != "":
				o = transfer.BatchOutcome{Err: &Error{Op: "uploading " + files[i].Rel, Msg: "the server could not write it: " + r.Error, Reason: r.Cause}}
			case r.Size != files[i].Size:
				o = transfer.BatchOutcome{Err: &Error{Op: "uploading " + files[i].Rel, Msg: fmt.Sprintf("the server wrote %d bytes of %d", r.Size, files[i].Size)}}
			}
			out[i] = o
		}
		if res.Tree != nil {
			after = *res.Tree
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, after, nil
}

// localError is a failure to read a local file into a batch: not the
// link's fault, so not retried.
type localError struct {
	rel string
	err error
}

func (e *localError) Error() string {
	return fmt.Sprintf("reading the local file %s: %v", e.rel, e.err)
}

// tarHeader is the header of f in a batch's tar stream.
func tarHeader(f transfer.BatchFile) *tar.Header {
	return &tar.Header{Name: f.Rel, Size: f.Size, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
}

// tarSize is the length of the tar stream writeTar makes of files: each
// file's header blocks (as the tar writer writes them), its bytes padded to
// a block, and the two zero blocks that end the stream. Sent as the
// request's Content-Length, it spares both hops (to the proxy, and on to
// the server) the chunked encoding.
func tarSize(files []transfer.BatchFile) (int64, error) {
	var total int64
	for _, f := range files {
		n, err := tarEntrySize(f)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total + tarEnd, nil
}

// tarEnd is the length of the two zero blocks that end a tar stream.
const tarEnd = 2 * 512

// tarEntrySize is the length of f in a tar stream: its header blocks and
// its bytes padded to a block.
func tarEntrySize(f transfer.BatchFile) (int64, error) {
	const block = 512
	var n countingWriter
	if err := tar.NewWriter(&n).WriteHeader(tarHeader(f)); err != nil {
		return 0, fmt.Errorf("%s cannot be sent in a batch: %w", f.Rel, err)
	}
	return int64(n) + (f.Size+block-1)/block*block, nil
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// writeTar writes files to w as a tar stream, in pieces of tarChunk: the
// tar writer's own writes (a header, a file's padding) are small, and each
// write is a TLS record and a system call on every hop.
func writeTar(w io.Writer, files []transfer.BatchFile) error {
	bw := bufio.NewWriterSize(w, tarChunk)
	tw := tar.NewWriter(bw)
	for _, f := range files {
		if err := tw.WriteHeader(tarHeader(f)); err != nil {
			return err
		}
		body, err := f.Open()
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return &localError{f.Rel, err}
		}
		n, err := io.Copy(tw, io.LimitReader(body, f.Size))
		body.Close()
		if err == nil && n != f.Size {
			err = fmt.Errorf("it has %d bytes, not the %d it had when the sync began", n, f.Size)
		}
		if err != nil {
			if errors.Is(err, io.ErrClosedPipe) {
				return err
			}
			return &localError{f.Rel, err}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// tarChunk is the size of the pieces writeTar writes: four full TLS records.
const tarChunk = 64 << 10
