package apiclient

import (
	"context"
	"fmt"
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
