package api

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientIPTrustsOnlyConfiguredProxies(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cases := []struct {
		name, remote string
		xff          []string
		trusted      []netip.Prefix
		want         string
	}{
		{"no proxies configured: the header is ignored", "10.1.2.3:5000", []string{"203.0.113.9"}, nil, "10.1.2.3"},
		{"an untrusted peer cannot claim an address", "198.51.100.7:5000", []string{"203.0.113.9"}, proxies, "198.51.100.7"},
		{"behind one trusted proxy", "10.1.2.3:5000", []string{"203.0.113.9"}, proxies, "203.0.113.9"},
		{"right to left, skipping trusted hops", "10.1.2.3:5000", []string{"192.0.2.66, 203.0.113.9, 10.9.9.9"}, proxies, "203.0.113.9"},
		{"a spoofed left-most entry is not believed", "10.1.2.3:5000", []string{"192.0.2.66", "203.0.113.9"}, proxies, "203.0.113.9"},
		{"every hop trusted: the left-most", "10.1.2.3:5000", []string{"10.7.7.7, 10.8.8.8"}, proxies, "10.7.7.7"},
		{"garbage stops at the last vouched-for address", "10.1.2.3:5000", []string{"203.0.113.9, not-an-ip, 10.8.8.8"}, proxies, "10.8.8.8"},
		{"trusted proxy without the header", "10.1.2.3:5000", nil, proxies, "10.1.2.3"},
		{"IPv6 proxy, IPv4-mapped client", "[fd00::1]:443", []string{"::ffff:203.0.113.9"}, proxies, "203.0.113.9"},
		{"client with a port", "10.1.2.3:5000", []string{"[2001:db8::5]:1234"}, proxies, "2001:db8::5"},
	}
	for _, c := range cases {
		r, err := http.NewRequest("GET", "http://cairn.test/", nil)
		require.NoError(t, err)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		require.Equal(t, c.want, clientIP(r, c.trusted), c.name)
	}
}
