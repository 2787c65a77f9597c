package runtime

import (
	"context"
	"fmt"
	"net/http"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/agent/transport"
)

// WebSocketDialer opens a further WebSocket to the Engine with the
// device's auth, as the realtime socket is dialled. The Caller that
// handlers receive (*Tokens) implements it; a feature that needs a socket
// of its own (a shell session) asserts it, so Caller stays a one-method
// interface.
type WebSocketDialer interface {
	DialWebSocket(ctx context.Context, url string, header http.Header) (*websocket.Conn, error)
}

var _ WebSocketDialer = (*Tokens)(nil)

// DialWebSocket dials url (ws:// or wss://) with the access token, a DPoP
// proof and header. A refusal that a refresh can cure (expired token,
// older token version) refreshes once and dials again, as Call does.
// ctx bounds only the dial, never the connection.
func (t *Tokens) DialWebSocket(ctx context.Context, url string, header http.Header) (*websocket.Conn, error) {
	for attempt := 0; ; attempt++ {
		access, err := t.Access(ctx)
		if err != nil {
			return nil, err
		}
		dctx, cancel := context.WithTimeout(ctx, t.timing.RequestTimeout)
		conn, err := t.client.DialWebSocketHeader(dctx, url, access, header)
		cancel()
		if err == nil {
			return conn, nil
		}
		if attempt > 0 || !refreshCodes[transport.Code(err)] {
			// transport names the URL (without its query) already.
			return nil, fmt.Errorf("websocket dial: %w", err)
		}
		if rerr := t.Refresh(ctx, access); rerr != nil {
			return nil, rerr
		}
	}
}
