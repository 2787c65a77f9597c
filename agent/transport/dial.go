package transport

// The fallback dial (SPEC "Agent-side behavior" item 6): every TCP
// connection to the Engine first dials the FQDN of server_url; when that
// fails it dials server_ip_fallback on the same port. Only the TCP target
// changes: the http.Transport still runs TLS and HTTP against the URL's
// host, so the FQDN stays the Host header, the TLS server name and the
// name the certificate is checked against.

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"
)

// Dial timeouts. The primary one is short: an agent whose DNS or route to
// the FQDN is broken should reach the fallback quickly, and every new
// connection pays it again.
const (
	DefaultPrimaryDialTimeout  = 5 * time.Second
	DefaultFallbackDialTimeout = 10 * time.Second
)

// DialInfo describes one TCP dial to the Engine.
type DialInfo struct {
	At time.Time
	// Addr is the address asked for (FQDN and port).
	Addr string
	// Remote is the address connected to; empty when both dials failed.
	Remote string
	// Fallback is true when the connection went to server_ip_fallback.
	Fallback bool
	// PrimaryErr is why the FQDN dial failed ("" when it worked).
	PrimaryErr string
	// Err is the final error ("" when a connection was made).
	Err string
}

// DialStats counts dials to the Engine since the Client was made; the
// run loop reports them and tests check which path was taken.
type DialStats struct {
	Direct   uint64 // the FQDN answered
	Fallback uint64 // the FQDN failed and server_ip_fallback answered
	Failed   uint64 // nothing answered
	Last     DialInfo
}

// dialer dials the Engine with the fallback rule. Hosts other than the
// Engine's (a realtime route may name another host) are dialled plainly:
// the fallback IP is the Engine's, so using it for a different name would
// connect to the wrong machine.
type dialer struct {
	engineHost      string // lower-case host of server_url, no port
	fallbackIP      string // bare IP or ""
	primaryTimeout  time.Duration
	fallbackTimeout time.Duration
	log             *slog.Logger
	now             func() time.Time

	mu    sync.Mutex
	stats DialStats
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(host, d.engineHost) {
		nd := net.Dialer{Timeout: d.fallbackTimeout, KeepAlive: 30 * time.Second}
		return nd.DialContext(ctx, network, addr)
	}
	info := DialInfo{At: d.now(), Addr: addr}
	primary := net.Dialer{Timeout: d.primaryTimeout, KeepAlive: 30 * time.Second}
	conn, perr := primary.DialContext(ctx, network, addr)
	if perr == nil {
		info.Remote = conn.RemoteAddr().String()
		d.record(info)
		return conn, nil
	}
	info.PrimaryErr = perr.Error()
	// A cancelled caller wants no more dialling; without a fallback the
	// primary error is the answer.
	if d.fallbackIP == "" || ctx.Err() != nil {
		info.Err = perr.Error()
		d.record(info)
		return nil, perr
	}
	target := net.JoinHostPort(d.fallbackIP, port)
	d.log.Warn("engine dial failed, trying server_ip_fallback", "addr", addr, "fallback", target, "err", perr)
	fallback := net.Dialer{Timeout: d.fallbackTimeout, KeepAlive: 30 * time.Second}
	conn, ferr := fallback.DialContext(ctx, network, target)
	if ferr != nil {
		err := fmt.Errorf("%w; server_ip_fallback %s: %w", perr, target, ferr)
		info.Err = err.Error()
		d.record(info)
		return nil, err
	}
	info.Remote, info.Fallback = conn.RemoteAddr().String(), true
	d.record(info)
	return conn, nil
}

func (d *dialer) record(info DialInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case info.Err != "":
		d.stats.Failed++
	case info.Fallback:
		d.stats.Fallback++
	default:
		d.stats.Direct++
	}
	d.stats.Last = info
}

func (d *dialer) snapshot() DialStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}
