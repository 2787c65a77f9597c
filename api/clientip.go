package api

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the one place that decides which address a request came
// from: rate limits, the audit trail, sessions and enrollment requests all
// use it. The peer's address is the answer unless the peer is one of the
// trusted proxies (CAIRN_TRUSTED_PROXIES); then X-Forwarded-For is read
// right to left, skipping trusted hops, and the first address not trusted
// is the client. Entries left of it are whatever the client chose to send
// and are never believed. Without trusted proxies the header is ignored.
func clientIP(r *http.Request, trusted []netip.Prefix) string {
	peer, ok := parseAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr
	}
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		hop, ok := parseAddr(strings.TrimSpace(hops[i]))
		if !ok {
			// A trusted proxy passed on garbage: the last address it
			// vouched for is the best we know.
			break
		}
		client = hop
		if !isTrusted(hop, trusted) {
			break
		}
	}
	return client.String()
}

// parseAddr reads "ip", "ip:port" or "[ipv6]:port", IPv4-mapped IPv6
// addresses as IPv4 so one client has one key.
func parseAddr(s string) (netip.Addr, bool) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
