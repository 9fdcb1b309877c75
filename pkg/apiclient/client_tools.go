package apiclient

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	"github.com/hoster-dev/hoster/pkg/api"
	"github.com/hoster-dev/hoster/pkg/transfer"
)

// maxListing bounds a tools listing's answer, 64 MiB: the game-log listing,
// the longest, takes about 100 bytes a file, so 64 MiB is some 650,000
// files, the 30 days a server keeps of more than 400 games running every
// hour of them (two files a game an hour); the access-log and stats
// listings stay under 100 KiB. A longer answer is refused rather than read:
// decoding one costs the client many times its size.
const maxListing = 64 << 20

// Logs fetches the access-log listing.
func (c *Client) Logs(ctx context.Context) (api.LogListing, error) {
	var l api.LogListing
	err := c.getJSON(ctx, "listing the access logs", api.ToolsPath(api.Version, api.PathLogs), maxListing, &l)
	return l, err
}

// Stats fetches the health day-file listing.
func (c *Client) Stats(ctx context.Context) (api.StatsListing, error) {
	var l api.StatsListing
	err := c.getJSON(ctx, "listing the health day-files", api.ToolsPath(api.Version, api.PathStats), maxListing, &l)
	return l, err
}

// GameLogs fetches the game-log listing (variant 1 only: a variant 2 server
// answers ErrNotFound).
func (c *Client) GameLogs(ctx context.Context) (api.GameLogListing, error) {
	var l api.GameLogListing
	err := c.getJSON(ctx, "listing the game logs", api.ToolsPath(api.Version, api.PathGameLogs), maxListing, &l)
	return l, err
}

// GameLogsEach streams the game-log listing (variant 1 only: a variant 2
// server answers ErrNotFound), calling each with every file as the answer
// comes, in its order: a pull fetches the first folders' files while the
// server still lists the last ones. Getting the answer is retried as
// every request of the client is. An answer cut off part-way is asked
// again, and its files up to the last one handed on are skipped, while
// the files came sorted by path (hoster-server's do; the contract does not
// say) and each answer brought one more; else, or for one that is not the
// listing's JSON, it is an error once each has been called for the files
// before it.
func (c *Client) GameLogsEach(ctx context.Context, each func(api.GameLogFile)) error {
	var last string // the last file handed on
	sorted := true
	for fruitless := 0; ; {
		from, got := last, 0
		err := c.gameLogsEach(ctx, func(f api.GameLogFile) {
			if from != "" && f.Path <= from {
				return // handed on from an answer cut before
			}
			sorted = sorted && f.Path > last
			last, got = f.Path, got+1
			each(f)
		})
		if err == nil || !errors.Is(err, errListingCut) || !sorted || ctx.Err() != nil {
			return err
		}
		if fruitless++; got > 0 {
			fruitless = 0
		}
		if fruitless >= max(c.attempts, 1) {
			return err
		}
	}
}

// errListingCut marks a listing's answer cut off part-way.
var errListingCut = errors.New("the listing was cut off")

// gameLogsEach is one request of GameLogsEach.
func (c *Client) gameLogsEach(ctx context.Context, each func(api.GameLogFile)) error {
	op := "listing the game logs"
	k := call{op: op, method: http.MethodGet, path: api.ToolsPath(api.Version, api.PathGameLogs), stream: true}
	return c.do(ctx, k, func(resp *http.Response, _ []byte) error {
		defer resp.Body.Close()
		body := &io.LimitedReader{R: resp.Body, N: maxListing + 1}
		err := decodeGameLogs(json.NewDecoder(bufio.NewReaderSize(body, 64<<10)), each)
		switch {
		case body.N <= 0:
			return &Error{Op: op, Status: resp.StatusCode, Err: fmt.Errorf("the answer is over %d MiB, more than any answer to this request should be; refused", maxListing>>20)}
		case err == nil:
			return nil
		case errors.Is(err, errNotListing):
			return &Error{Op: op, Msg: "the answer is not the expected JSON: " + err.Error()}
		}
		return listingCut{transportError(op, fmt.Errorf("reading the listing: %w", err))}
	})
}

// listingCut is a listing's answer cut off part-way: its error as the
// client says it, and errListingCut.
type listingCut struct{ error }

func (e listingCut) Unwrap() []error { return []error{e.error, errListingCut} }

// errNotListing is an answer that reads as JSON but not as the listing.
var errNotListing = errors.New("not a listing")

// decodeGameLogs reads a game-log listing from dec, calling each with
// every file of it as it is read; the other members of the object are
// skipped, as encoding/json skips them.
func decodeGameLogs(dec *json.Decoder, each func(api.GameLogFile)) error {
	if err := wantDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return syntaxOr(err)
		}
		if key != "files" {
			if err := dec.Decode(&json.RawMessage{}); err != nil {
				return syntaxOr(err)
			}
			continue
		}
		if err := decodeFiles(dec, each); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return syntaxOr(err)
}

// decodeFiles reads the listing's files array (or null) from dec.
func decodeFiles(dec *json.Decoder, each func(api.GameLogFile)) error {
	t, err := dec.Token()
	if err != nil {
		return syntaxOr(err)
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('[') {
		return fmt.Errorf("%w: files is not an array", errNotListing)
	}
	var raw json.RawMessage
	for dec.More() {
		if err := dec.Decode(&raw); err != nil {
			return syntaxOr(err)
		}
		f, ok := plainFile(raw)
		if !ok {
			if err := json.Unmarshal(raw, &f); err != nil {
				return syntaxOr(err)
			}
		}
		each(f)
	}
	_, err = dec.Token() // the closing bracket
	return syntaxOr(err)
}

// plainFile reads a listing's file written as hoster-server writes it,
// {"path":"<path>","size":<n>} with no space and no escape in the path:
// what encoding/json would read from it, without its reflection, a third
// of a pull's decoding. ok is false for any other form (a valid JSON
// value: the decoder checked it), which encoding/json then reads.
func plainFile(raw []byte) (f api.GameLogFile, ok bool) {
	rest, ok := bytes.CutPrefix(raw, []byte(`{"path":"`))
	if !ok {
		return f, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return f, false
	}
	path := rest[:end]
	for _, c := range path {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return f, false // an escape, a control or a non-ASCII byte: encoding/json's to read
		}
	}
	digits, ok := bytes.CutPrefix(rest[end+1:], []byte(`,"size":`))
	if !ok || len(digits) < 2 || len(digits) > 19 || digits[len(digits)-1] != '}' {
		return f, false
	}
	size, err := strconv.ParseInt(string(digits[:len(digits)-1]), 10, 64)
	if err != nil || size < 0 {
		return f, false
	}
	return api.GameLogFile{Path: string(path), Size: size}, true
}

// wantDelim reads the delimiter d from dec.
func wantDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return syntaxOr(err)
	}
	if t != d {
		return fmt.Errorf("%w: %v where %v was expected", errNotListing, t, d)
	}
	return nil
}

// syntaxOr is err, marked errNotListing where the bytes read are not
// the listing's JSON (not where reading them failed).
func syntaxOr(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return fmt.Errorf("%w: %w", errNotListing, err)
	}
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

var contentRange = regexp.MustCompile(`^bytes (\d+)-(\d+)/(\d+|\*)$`)

// Fetch requests one of the tools routes' files (route is PathLogsFile,
// PathStatsFile or PathGameLogsFile) from offset on; offset 0 asks for the
// whole file. The body is streamed, never buffered. Getting the answer is
// retried as every request of the client is (no answer, 5xx, 429); a body
// cut off while it streams is the caller's to resume.
func (c *Client) Fetch(ctx context.Context, route string, query url.Values, offset int64) (*transfer.Fetched, error) {
	op := "fetching " + route + "?" + query.Encode()
	k := call{op: op, method: http.MethodGet, path: api.ToolsPath(api.Version, route), query: query, stream: true}
	if offset > 0 {
		k.header = http.Header{"Range": {fmt.Sprintf("bytes=%d-", offset)}}
	}
	var f *transfer.Fetched
	err := c.do(ctx, k, func(resp *http.Response, _ []byte) error {
		f = &transfer.Fetched{Status: resp.StatusCode, Length: resp.ContentLength, Body: resp.Body}
		if f.Status == http.StatusPartialContent {
			m := contentRange.FindStringSubmatch(resp.Header.Get("Content-Range"))
			if m == nil {
				resp.Body.Close()
				return &Error{Op: op, Status: f.Status, Msg: "a 206 without a valid Content-Range"}
			}
			f.Start, _ = strconv.ParseInt(m[1], 10, 64)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// CanFetchBatch reports whether the server offered the batch download
// (FetchFiles) when Version was last asked.
func (c *Client) CanFetchBatch() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetch > 0
}

// FetchFiles asks for files whole with the batch download extension
// (PathFilesBatch; only where CanFetchBatch), in as many requests as the
// server's bound takes, one after the other, and calls each with every
// file's body and length, in their order, as the answer streams in: each
// reads what it needs of the body before it returns, and no more than the
// answer says it holds. Getting an answer is retried as every request of
// the client is; an answer cut mid-way is asked again from the file it
// was cut in (fetchResumed), so each may be called again for a file whose
// body ended in an error. The error is for a request or a stream that
// failed as a whole, the files each was not called for, or last called
// for with a body that ended in an error, unfetched. The stall timeout
// watches the stream as it does every body.
func (c *Client) FetchFiles(ctx context.Context, files []api.FetchFile, each func(i int, body io.Reader, length int64)) error {
	c.mu.Lock()
	per := max(c.fetch, 1)
	c.mu.Unlock()
	for from := 0; from < len(files); from += per {
		part := files[from:min(from+per, len(files))]
		if err := c.fetchResumed(ctx, part, func(i int, r io.Reader, n int64) { each(from+i, r, n) }); err != nil {
			return err
		}
	}
	return nil
}

// fetchResumed is one request of FetchFiles, asked again for the files
// from the one its answer was cut in, for as long as each answer cut
// brought a file whole, and up to the client's attempts in a row when none
// did. An answer is cut by a connection that drops: over HTTP/1.1, Caddy
// 2.6 drops a streamed answer to a request with a body about once in 100
// batches (its transport still reads the request's body when its server,
// writing the answer's headers, has closed it: golang/go#40747).
func (c *Client) fetchResumed(ctx context.Context, files []api.FetchFile, each func(i int, body io.Reader, length int64)) error {
	for from, fruitless := 0, 0; ; {
		got, err := c.fetchBatch(ctx, files[from:], func(i int, r io.Reader, n int64) { each(from+i, r, n) })
		if err == nil || got < 0 || ctx.Err() != nil {
			return err
		}
		fruitless++
		if got > 0 {
			fruitless = 0
		}
		if fruitless >= c.attempts {
			return err
		}
		from += got
	}
}

// batchReadBuffer is what a batch download's answer is read in.
const batchReadBuffer = 256 << 10

// fetchBatch is one request of FetchFiles. When its answer was cut (a
// read of it failed), got is how many files came whole before the cut;
// else it is -1.
func (c *Client) fetchBatch(ctx context.Context, files []api.FetchFile, each func(i int, body io.Reader, length int64)) (got int, err error) {
	op := fmt.Sprintf("fetching %d files at once", len(files))
	req, err := json.Marshal(api.FetchRequest{Files: files})
	if err != nil {
		return -1, &Error{Op: op, Msg: err.Error()}
	}
	open := func() (body, error) {
		return body{r: io.NopCloser(bytes.NewReader(req)), size: int64(len(req)),
			reopen: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(req)), nil }}, nil
	}
	k := call{op: op, method: http.MethodPost, path: api.ToolsPath(api.Version, api.PathFilesBatch),
		contentType: "application/json", open: open, stream: true}
	got = -1
	err = c.do(ctx, k, func(resp *http.Response, _ []byte) error {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return &Error{Op: op, Status: resp.StatusCode, Msg: "the answer is not a 200 with the files"}
		}
		// Read in big pieces: HTTP/2 sends the server a window update for
		// every read of 4 KiB or more, and the tar reader reads a file's
		// header and body apart.
		br := bufio.NewReaderSize(resp.Body, batchReadBuffer)
		tr := tar.NewReader(br)
		defer drainTar(tr, br)
		for i := range files {
			h, err := tr.Next()
			if err != nil {
				got = i
				return transportError(op, fmt.Errorf("reading the answer before file %d: %w", i, err))
			}
			if h.Name != strconv.Itoa(i) || h.Typeflag != tar.TypeReg {
				return &Error{Op: op, Msg: fmt.Sprintf("the answer's entry %q is not file %d", h.Name, i)}
			}
			entry := &entryReader{r: tr}
			each(i, entry, h.Size)
			if entry.err != nil {
				got = i
				return transportError(op, fmt.Errorf("reading file %d of the answer: %w", i, entry.err))
			}
		}
		return nil
	})
	return got, err
}

// drainTar reads what is left of a batch answer read whole, the tar's end
// and the body's, up to a bound: an HTTP/1.1 connection whose answer was
// not read to its end is closed, not kept for the next request.
func drainTar(tr *tar.Reader, br *bufio.Reader) {
	if _, err := tr.Next(); err == io.EOF {
		io.Copy(io.Discard, io.LimitReader(br, 64<<10))
	}
}

// entryReader is a batch answer's entry as each reads it, keeping the
// error of a read that failed: the answer was cut in it.
type entryReader struct {
	r   io.Reader
	err error
}

func (e *entryReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}
