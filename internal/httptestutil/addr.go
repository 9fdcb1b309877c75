package httptestutil

import (
	"net"
	"testing"
)

// FreeAddrs are n loopback addresses ("127.0.0.1:port") free a moment ago,
// for a test's servers that must be told their address before they listen.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}
