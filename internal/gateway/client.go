// Package gateway is the remote-desktop and tunnel gateway as a process
// of its own (`cairn gateway`; docs/architecture.md "Gateway process"):
// it holds the Engine's WireGuard and the RFB gateway without database
// credentials. It gets the WireGuard key (sealed to its own X25519 key)
// and its peers through signed Internal calls (vpn-prepare,
// vpn-sessions), asks the Engine for an agent's VNC credential sealed to
// a one-time key of its own, and reports session events through POST
// /api/internal/vnc/session-event. The Engine reaches it through Client:
// tunnel dials for probes and the browser's desktop socket, each a
// WebSocket signed under a key derived from the gateway's Internal key.
package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

// The gateway's listener paths (the Engine's requests, signed).
const (
	PathDial = "/gateway/v1/dial"
	PathVNC  = "/gateway/v1/vnc/"
)

// Client is the Engine's side: it reaches tunnels and runs desktop
// sessions through the gateway process holding the WireGuard lease.
type Client struct {
	// URL is the gateway's listener (CAIRN_GATEWAY_URL).
	URL     string
	Tunnels *tunnels.Service
	Keys    *internalauth.Service
	HTTP    *http.Client
	Now     func() time.Time
}

// Available: a gateway holds a live lease.
func (c *Client) Available(ctx context.Context) (bool, string) {
	id, err := c.Tunnels.GatewayHolder(ctx)
	if err != nil || id == "" {
		return false, "no remote-desktop gateway process holds the WireGuard tunnels now"
	}
	return true, ""
}

// open dials a signed WebSocket to the gateway.
func (c *Client) open(ctx context.Context, path string, q url.Values) (*websocket.Conn, error) {
	keyID, err := c.Tunnels.GatewayHolder(ctx)
	if err != nil {
		return nil, err
	}
	if keyID == "" {
		return nil, cairn.Errorf(tunnels.ECodeUnavailable, "no remote-desktop gateway process holds the WireGuard tunnels now; try again")
	}
	secret, err := c.Keys.Secret(ctx, keyID)
	if err != nil {
		return nil, cairn.Errorf(tunnels.ECodeUnavailable, "the gateway's Internal key is not active")
	}
	target := strings.TrimRight(c.URL, "/") + path + "?" + q.Encode()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	internalauth.Sign(r, nil, keyID, internalauth.Derive(secret, internalauth.PurposeToGateway), now())
	h := http.Header{}
	for _, k := range []string{internalauth.HeaderKeyID, internalauth.HeaderTimestamp, internalauth.HeaderNonce, internalauth.HeaderSignature} {
		h.Set(k, r.Header.Get(k))
	}
	ws, res, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: c.HTTP, HTTPHeader: h})
	if err != nil {
		if res != nil && res.StatusCode == http.StatusNotFound {
			return nil, cairn.Errorf(tunnels.ECodeNoTunnel, "the gateway serves no tunnel of this device")
		}
		return nil, cairn.Errorf(tunnels.ECodeUnavailable, "the remote-desktop gateway could not be reached: %v", err)
	}
	ws.SetReadLimit(8 << 20)
	return ws, nil
}

// Dial is a TCP connection to port on guid's tunnel address through the
// gateway (a relay over a signed WebSocket).
func (c *Client) Dial(ctx context.Context, guid cairn.DeviceGUID, port int) (net.Conn, error) {
	t, err := c.Tunnels.Get(ctx, guid)
	if err != nil {
		return nil, err
	}
	if t.TrustState != "active" {
		return nil, cairn.Errorf(tunnels.ECodeNoTunnel, "the device is %s: its tunnel is torn down", t.TrustState)
	}
	ws, err := c.open(ctx, PathDial, url.Values{"guid": {string(guid)}, "port": {strconv.Itoa(port)}})
	if err != nil {
		return nil, err
	}
	// The connection outlives the dial's context.
	return websocket.NetConn(context.WithoutCancel(ctx), ws, websocket.MessageBinary), nil
}

// OpenDesktop opens the gateway's side of a live session's socket: the
// gateway asks the agent for its credential, authenticates, speaks RFB
// to the browser and reports the session's events itself.
func (c *Client) OpenDesktop(ctx context.Context, session string, guid cairn.DeviceGUID, rotate bool) (*websocket.Conn, error) {
	q := url.Values{"guid": {string(guid)}}
	if rotate {
		q.Set("rotate", "1")
	}
	return c.open(ctx, PathVNC+url.PathEscape(session), q)
}

// String names the gateway in logs.
func (c *Client) String() string { return fmt.Sprintf("gateway %s", c.URL) }
