package apiclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"

	"github.com/hoster-dev/hoster/pkg/api"
)

// Logs fetches the access-log listing.
func (c *Client) Logs(ctx context.Context) (api.LogListing, error) {
	var l api.LogListing
	err := c.getJSON(ctx, "listing the access logs", api.ToolsPath(api.Version, api.PathLogs), &l)
	return l, err
}

// Stats fetches the health day-file listing.
func (c *Client) Stats(ctx context.Context) (api.StatsListing, error) {
	var l api.StatsListing
	err := c.getJSON(ctx, "listing the health day-files", api.ToolsPath(api.Version, api.PathStats), &l)
	return l, err
}

// GameLogs fetches the game-log listing (variant 1 only: a variant 2 server
// answers ErrNotFound).
func (c *Client) GameLogs(ctx context.Context) (api.GameLogListing, error) {
	var l api.GameLogListing
	err := c.getJSON(ctx, "listing the game logs", api.ToolsPath(api.Version, api.PathGameLogs), &l)
	return l, err
}

var contentRange = regexp.MustCompile(`^bytes (\d+)-(\d+)/(\d+|\*)$`)

// Fetch requests one of the tools routes' files (route is PathLogsFile,
// PathStatsFile or PathGameLogsFile) from offset on; offset 0 asks for the
// whole file. The body is streamed, never buffered. Getting the answer is
// retried as every request of the client is (no answer, 5xx, 429); a body
// cut off while it streams is the caller's to resume.
func (c *Client) Fetch(ctx context.Context, route string, query url.Values, offset int64) (*api.Fetched, error) {
	op := "fetching " + route + "?" + query.Encode()
	var f *api.Fetched
	err := c.retry(ctx, op, func() error {
		req := c.r.R().SetContext(ctx).SetQueryParamsFromValues(query).SetDoNotParseResponse(true)
		if offset > 0 {
			req.SetHeader("Range", fmt.Sprintf("bytes=%d-", offset))
		}
		resp, err := req.Get(api.ToolsPath(api.Version, route))
		if err != nil {
			return answerError(op, resp, err)
		}
		body := resp.RawBody()
		f = &api.Fetched{Status: resp.StatusCode(), Length: resp.RawResponse.ContentLength, Body: body}
		switch f.Status {
		case http.StatusOK:
			return nil
		case http.StatusPartialContent:
			m := contentRange.FindStringSubmatch(resp.Header().Get("Content-Range"))
			if m == nil {
				body.Close()
				return &Error{Op: op, Status: f.Status, Msg: "a 206 without a valid Content-Range"}
			}
			f.Start, _ = strconv.ParseInt(m[1], 10, 64)
			return nil
		}
		msg, _ := io.ReadAll(io.LimitReader(body, 4096))
		body.Close()
		return statusError(op, f.Status, resp.Header(), msg)
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}
