// Package clientip is the one rule for the address of the client behind a
// request: the peer's own address, unless the peer is a proxy on this
// machine (a loopback address, as Caddy is in front of hoster-server), whose
// X-Forwarded-For then names the client. A peer from anywhere else may send
// any X-Forwarded-For it likes: it is never believed.
package clientip

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Of is the address of the client of r. Behind a loopback proxy it is the
// last address of X-Forwarded-For, the one the proxy itself appended (Caddy
// replaces what an untrusted client sent with the client's address; a proxy
// that appends puts it last too), read across every X-Forwarded-For line.
// A header that does not end in a valid address is ignored: the answer is
// then the proxy's address, never a made-up one. The zero Addr means
// r.RemoteAddr is not an address (a request not from the network).
func Of(r *http.Request) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if !peer.IsLoopback() {
		return peer
	}
	lines := r.Header.Values("X-Forwarded-For")
	if len(lines) == 0 {
		return peer
	}
	hops := strings.Split(lines[len(lines)-1], ",")
	if a, err := netip.ParseAddr(strings.TrimSpace(hops[len(hops)-1])); err == nil {
		return a.Unmap().WithZone("")
	}
	return peer
}

// peerAddr is the address of a RemoteAddr "host:port" (or a bare host).
func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}
