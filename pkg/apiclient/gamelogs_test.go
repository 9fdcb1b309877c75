package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hoster-dev/hoster/pkg/api"
)

// GameLogsEach reads the listing as encoding/json reads it (members it
// does not know skipped, a null files array empty, escapes, keys in
// another case or order, the last of a repeated one: what hoster-server
// does not write goes through encoding/json), tells an answer that
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
		{`{"files":[{"path":"a\"b\u00e9","size":1},{"path":"é","size":-2},{"PATH":"c","Size":3},{"path":"d","size":4,"path":"e"}]}`, `a"bé=1 é=-2 c=3 e=4`, ""},
		{`{"files":[{"path":"a","size":0},{"size":5,"path":"b"},{"path":"c" ,"size":6},{"path":"d","size":7 }]}`, "a=0 b=5 c=6 d=7", ""},
		{`{"files":[{"path":"a","size":1.5}]}`, "", "not the expected JSON"},
		{`{"files":[{"path":"a","size":99999999999999999999}]}`, "", "not the expected JSON"},
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

// plainFile reads what it reads as encoding/json does; go test runs the
// seeds, go test -fuzz FuzzPlainFile looks further.
func FuzzPlainFile(f *testing.F) {
	for _, s := range []string{`{"path":"a/b.jsonl","size":12}`, `{"path":"a","size":0}`, `{"path":"a","size":-0}`,
		`{"path":"a","size":123456789012345678}`, `{"path":"a","size":9223372036854775807}`, `{"path":"","size":1}`,
		`{"path":"a\\b","size":1}`, `{"path":"a","size":1,"x":2}`, `{"path":"a","size":1e2}`, `{"path":"\u007f","size":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := plainFile(raw)
		var want api.GameLogFile
		if !ok || !json.Valid(raw) {
			return
		}
		if err := json.Unmarshal(raw, &want); err != nil || got != want {
			t.Fatalf("%s: %+v, encoding/json: %+v %v", raw, got, want, err)
		}
	})
}
