package watchdogs

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/cairn-rmm/cairn"
)

// A webhook is a URL an admin types and the Engine POSTs to from inside
// the network it runs in. Unless the channel allows it explicitly
// (WebhookConfig.AllowPrivateCIDRs), a webhook may not reach loopback,
// link-local (the cloud metadata service at 169.254.169.254), private,
// CGNAT, multicast, unspecified or otherwise reserved addresses. The
// check is made when the socket is about to connect, on the address the
// name resolved to (a net.Dialer Control func): a name that resolves to
// a public address at save and to 127.0.0.1 at send (DNS rebinding),
// and a redirect to such an address, are refused the same way.

// MaxAllowCIDRs bounds a webhook's allow-list.
const MaxAllowCIDRs = 32

// blockedPrefixes are the ranges a webhook may not reach by default.
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network", unspecified
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // CGNAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
		"::ffff:0:0/96",   // IPv4-mapped: checked as IPv4 instead
		"2002::/16",       // 6to4 may embed any IPv4 address
		"64:ff9b::/96",    // NAT64 may embed any IPv4 address
		"2001::/32",       // Teredo
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// RefusedAddressError is a dial refused by the guard. It names the
// address, never the channel's secret.
type RefusedAddressError struct{ Addr netip.Addr }

func (e *RefusedAddressError) Error() string {
	return fmt.Sprintf("webhook: %s is a loopback, link-local, private or reserved address; "+
		"add it to the channel's webhook.allow_private_cidrs to allow it", e.Addr)
}

// addrGuard decides which addresses a webhook may connect to.
type addrGuard struct{ allow []netip.Prefix }

func newAddrGuard(cidrs []string) (addrGuard, error) {
	var g addrGuard
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return addrGuard{}, fmt.Errorf("webhook: allow_private_cidrs: %q is not a CIDR", c)
		}
		g.allow = append(g.allow, p.Masked())
	}
	return g, nil
}

// check answers nil when a may be reached.
func (g addrGuard) check(a netip.Addr) error {
	a = a.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	for _, p := range g.allow {
		if p.Contains(a) {
			return nil
		}
	}
	if !a.IsValid() {
		return &RefusedAddressError{Addr: a}
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return &RefusedAddressError{Addr: a}
		}
	}
	return nil
}

// control is the net.Dialer Control func: address is the resolved
// ip:port the socket is about to connect to.
func (g addrGuard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: cannot check the address %q", address)
	}
	return g.check(ap.Addr())
}

// maxRedirects bounds the redirects a webhook POST follows (each hop's
// address is checked at dial like the first).
const maxRedirects = 3

// client is an HTTP client whose every connection goes through the
// guard. It ignores proxy settings: a proxy would connect for us, out of
// the guard's reach.
func (g addrGuard) client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: -1, Control: g.control}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext, TLSHandshakeTimeout: timeout,
			ResponseHeaderTimeout: timeout, DisableKeepAlives: true, ForceAttemptHTTP2: true},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("webhook: more than %d redirects", maxRedirects)
			}
			return nil
		},
	}
}

// refusedDial turns an error the guard caused (however deep the HTTP
// client wrapped it) into a final notification_refused.
func refusedDial(err error) error {
	var r *RefusedAddressError
	if errors.As(err, &r) {
		return cairn.Errorf(ECodeDeliveryRefused, "%s", r.Error())
	}
	return nil
}
