package transport

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"
)

// DialWebSocket opens the realtime socket at wsURL (ws:// or wss://, as
// the realtime route names it) over the same dialer and TLS trust as REST,
// authenticated with the access token and a DPoP proof. The proof's htm
// is GET and its htu is the http(s) form of wsURL, because the Engine
// checks proofs against its public https URL of the upgrade request. A
// refused upgrade returns an *Error like Do.
func (c *Client) DialWebSocket(ctx context.Context, wsURL, accessToken string) (*websocket.Conn, error) {
	return c.DialWebSocketHeader(ctx, wsURL, accessToken, nil)
}

// DialWebSocketHeader is DialWebSocket with extra request headers, for
// sockets that carry their own credential besides the device's (a shell
// session's token). The auth headers are set after extra, so extra cannot
// replace them.
func (c *Client) DialWebSocketHeader(ctx context.Context, wsURL, accessToken string, extra http.Header) (*websocket.Conn, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, fmt.Errorf("transport: websocket URL %q: %w", wsURL, err)
	}
	switch strings.ToLower(u.Scheme) {
	case "wss":
		u.Scheme = "https"
	case "ws":
		u.Scheme = "http"
	default:
		return nil, fmt.Errorf("transport: websocket URL %q must be ws:// or wss://", wsURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("transport: websocket URL %q has no host", wsURL)
	}
	if !c.trusted(u) {
		return nil, fmt.Errorf("transport: websocket %s is not on this agent's Engine (%s) or a realtime route it named", redact(u), origin(u))
	}
	h := extra.Clone()
	if h == nil {
		h = http.Header{}
	}
	if err := c.authorize(h, http.MethodGet, u.String(), AuthBearer(accessToken)); err != nil {
		return nil, err
	}
	conn, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: h})
	if err != nil {
		// An HTTP answer other than the upgrade carries the Engine's reason
		// (invalid_dpop_proof, wrong_worker, ...): report it as an *Error.
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			if rerr := CheckResponse(resp); rerr != nil {
				return nil, rerr
			}
		}
		return nil, fmt.Errorf("transport: websocket %s: %w", redact(u), err)
	}
	return conn, nil
}

// redact drops the query, which may carry a route ticket.
func redact(u *url.URL) string {
	v := *u
	v.RawQuery, v.ForceQuery, v.Fragment = "", false, ""
	return v.String()
}
