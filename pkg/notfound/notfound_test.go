package notfound

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The uniform 404 drops whatever a handler set before it, so no header can
// tell one miss from another.
func TestWriteIsTheSameWhateverCameBefore(t *testing.T) {
	plain := httptest.NewRecorder()
	Write(plain)
	dirty := httptest.NewRecorder()
	dirty.Header().Set("ETag", `"x"`)
	dirty.Header().Set("Content-Type", "text/html")
	Write(dirty)
	for _, w := range []*httptest.ResponseRecorder{plain, dirty} {
		if w.Code != http.StatusNotFound || w.Body.String() != Body {
			t.Fatalf("%d %q, want 404 %q", w.Code, w.Body, Body)
		}
	}
	want := http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"X-Content-Type-Options": {"nosniff"},
		"Content-Length":         {"19"},
	}
	for _, w := range []*httptest.ResponseRecorder{plain, dirty} {
		if len(w.Header()) != len(want) {
			t.Errorf("headers %v, want %v", w.Header(), want)
		}
		for k, v := range want {
			if w.Header().Get(k) != v[0] {
				t.Errorf("%s: %q, want %q", k, w.Header().Get(k), v[0])
			}
		}
	}
	closing := httptest.NewRecorder()
	WriteClosing(closing)
	if closing.Code != http.StatusNotFound || closing.Header().Get("Connection") != "close" || closing.Body.String() != Body {
		t.Errorf("WriteClosing: %d %v %q", closing.Code, closing.Header(), closing.Body)
	}
}
