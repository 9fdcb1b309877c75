// Package httptestutil holds small HTTP helpers shared by tests of different
// packages. It imports nothing of the project, so any test may use it.
package httptestutil

import (
	"io"
	"net/http"
	"testing"
)

// Get sends one GET for url with host as its Host header (the URL's own
// when empty) and header added, straight through http.DefaultTransport (no
// redirects followed), and returns the answer with its whole body read.
// Failing to send ends the test.
func Get(t testing.TB, url, host string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatalf("making the GET of %s: %v", url, err)
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}
