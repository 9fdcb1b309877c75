package apiclient

import (
	"context"
	"fmt"

	"github.com/hoster-dev/hoster/pkg/api"
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
func (c *Client) PutFiles(ctx context.Context, files []api.BatchFile, tree bool) ([]api.BatchOutcome, api.Tree, error) {
	c.mu.Lock()
	bounds := c.bounds
	c.mu.Unlock()
	parts, err := splitBatch(files, bounds)
	if err != nil {
		return nil, nil, &Error{Op: fmt.Sprintf("uploading %d files at once", len(files)), Msg: err.Error()}
	}
	out := make([]api.BatchOutcome, 0, len(files))
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
func splitBatch(files []api.BatchFile, b batchBounds) ([][]api.BatchFile, error) {
	var parts [][]api.BatchFile
	var cur []api.BatchFile
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
