package clientip

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The peer is the client unless it is a loopback proxy, whose
// X-Forwarded-For's last address (the one it appended) names the client;
// anything that is not an address falls back to the peer.
func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"a direct client", "203.0.113.7:51000", nil, "203.0.113.7"},
		{"a direct client's forged header is ignored", "203.0.113.7:51000", []string{"198.51.100.1"}, "203.0.113.7"},
		{"behind Caddy", "127.0.0.1:40000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"behind an appending proxy: the last hop", "127.0.0.1:40000", []string{"10.0.0.9, 198.51.100.1"}, "198.51.100.1"},
		{"the last header line", "127.0.0.1:40000", []string{"10.0.0.9", "198.51.100.1 "}, "198.51.100.1"},
		{"IPv6 loopback proxy, IPv6 client", "[::1]:40000", []string{"2001:db8::5"}, "2001:db8::5"},
		{"an IPv4-mapped client is IPv4", "127.0.0.1:40000", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"a zone is dropped", "127.0.0.1:40000", []string{"fe80::1%eth0"}, "fe80::1"},
		{"loopback without a header is itself", "127.0.0.1:40000", nil, "127.0.0.1"},
		{"a header that is no address", "127.0.0.1:40000", []string{"198.51.100.1, unknown"}, "127.0.0.1"},
		{"an empty last hop", "127.0.0.1:40000", []string{"198.51.100.1,"}, "127.0.0.1"},
		{"a peer that is no address", "pipe", nil, "invalid IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/g", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := Of(r).String(); got != tc.want {
				t.Fatalf("Of = %s, want %s", got, tc.want)
			}
		})
	}
}
