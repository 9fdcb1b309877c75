package apiclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
)

// GameLogsEach reads the listing as encoding/json reads it (members it
// does not know skipped, a null files array empty), tells an answer that
// is not the listing from one cut off, and retries a 5xx as every request.
func TestGameLogsEach(t *testing.T) {
	body := ""
	failFirst := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failFirst {
			failFirst = false
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		answer, cut := strings.CutPrefix(body, "CUT")
		if cut {
			w.Header().Set("Content-Length", "1000") // more than is sent: cut off
		}
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{Server: srv.URL, Token: secret, Attempts: 2, RetryBase: 1})
	list := func() (string, error) {
		var got []string
		err := c.GameLogsEach(context.Background(), func(f api.GameLogFile) { got = append(got, f.Path+"="+strconv.FormatInt(f.Size, 10)) })
		return strings.Join(got, " "), err
	}
	for _, tc := range []struct{ body, want, err string }{
		{`{"files":[{"path":"a","size":1},{"path":"b","size":2,"more":[1,{}]}]}`, "a=1 b=2", ""},
		{`{"x":{"files":[{"path":"no"}]},"files":[{"path":"a","size":1}],"y":null}` + "\n", "a=1", ""},
		{`{"files":null}`, "", ""},
		{`{"files":[]}`, "", ""},
		{`{"files":[{"path":"a","size":1},{"path":2}]}`, "a=1", "not the expected JSON"},
		{`{"files":{}}`, "", "not the expected JSON"},
		{`[]`, "", "not the expected JSON"},
		{`<html>`, "", "not the expected JSON"},
		{`CUT{"files":[{"path":"a","size":1},{"pa`, "a=1", "reading the listing"},
		{`{"files":[{"path":"a","size":1}`, "a=1", "unexpected EOF"},
	} {
		body, failFirst = tc.body, true
		got, err := list()
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.body, got, err, tc.want, tc.err)
		}
	}
}
