//go:build !windows

package transport

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// TestWebSocketThroughFallback dials wss://engine.invalid:<port> (which
// never resolves) and reaches the site worker stand-in through
// server_ip_fallback; the upgrade request's DPoP proof verifies against the
// https form of the URL, as the Engine checks it.
func TestWebSocketThroughFallback(t *testing.T) {
	t.Parallel()
	env := setup(t)
	v := devicetrust.NewVerifier(pgtest.NewDB(t), devicetrust.Options{})
	jkt := agent.Thumbprint(env.key.Public().(ed25519.PublicKey))
	var s seen
	handler := func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), proto.AuthScheme+" ")
		_, err := v.Verify(r.Context(), r.Header.Get(proto.HeaderDPoP), r.Method, devicetrust.RequestURL(nil, r), token, jkt)
		if err != nil || r.Header.Get(proto.HeaderAgentContext) != wantContext {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(proto.Error{Code: proto.CodeInvalidDPoPProof, Message: "refused"})
			return
		}
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		typ, msg, err := conn.Read(r.Context())
		if err != nil {
			return
		}
		_ = conn.Write(r.Context(), typ, append([]byte("echo "), msg...))
		_ = conn.Close(websocket.StatusNormalClosure, "")
	}
	port := env.serve(t, "127.0.0.1:0", s.handler(handler), false, 0)
	c := env.client(t, "https://"+engineName+":"+port, "127.0.0.1", env.caPEM)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wsURL := "wss://" + engineName + ":" + port + proto.PathRealtimeWS + "?route=r1"

	conn, err := c.DialWebSocket(ctx, wsURL, "access-1")
	require.NoError(t, err)
	defer conn.CloseNow()
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte("hello")))
	_, msg, err := conn.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, "echo hello", string(msg))

	host, sni, _ := s.get()
	require.Equal(t, engineName+":"+port, host)
	require.Equal(t, engineName, sni)
	stats := c.Dials()
	require.True(t, stats.Last.Fallback)
	require.Zero(t, stats.Direct)

	// A refused upgrade reports the Engine's code, like Do.
	other := env.client(t, "https://"+engineName+":"+port, "127.0.0.1", env.caPEM)
	other.key = newKey(t) // proofs from another key: cnf.jkt does not match
	_, err = other.DialWebSocket(ctx, wsURL, "access-1")
	var te *Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, http.StatusUnauthorized, te.Status)
	require.Equal(t, proto.CodeInvalidDPoPProof, Code(err))

	_, err = c.DialWebSocket(ctx, "https://"+engineName+":"+port+proto.PathRealtimeWS, "access-1")
	require.ErrorContains(t, err, "must be ws:// or wss://")
	_, err = c.DialWebSocket(ctx, wsURL, "")
	require.ErrorContains(t, err, "without an access token")
}

// A socket request for any origin but the Engine's (server_url, or a
// realtime route the Engine named) is refused before anything is sent: a
// shell_open put on the command path cannot lead the agent, its access
// token and a root shell to another server (issue 21 item 1).
func TestWebSocketOnlyToTheEnginesOrigins(t *testing.T) {
	t.Parallel()
	env := setup(t)
	var hits atomic.Int64
	elsewhere := env.serve(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }), false, 0)
	c := env.client(t, "https://"+engineName+":8443", "", env.caPEM)
	ctx := context.Background()
	for _, u := range []string{
		"wss://attacker.example" + proto.PathShellSocket + "/s1",
		"wss://127.0.0.1:" + elsewhere + proto.PathShellSocket + "/s1",
		"ws://" + engineName + ":8443" + proto.PathShellSocket + "/s1", // plain HTTP is another origin
		"wss://" + engineName + ":9443" + proto.PathShellSocket + "/s1",
	} {
		_, err := c.DialWebSocketHeader(ctx, u, "access-1", nil)
		require.ErrorContains(t, err, "is not on this agent's Engine", u)
	}
	require.Zero(t, hits.Load())

	// A route the Engine named makes its origin one of the Engine's.
	require.NoError(t, c.TrustOrigin("wss://127.0.0.1:"+elsewhere+proto.PathRealtimeWS+"?route=r1"))
	_, err := c.DialWebSocketHeader(ctx, "wss://127.0.0.1:"+elsewhere+proto.PathShellSocket+"/s1", "access-1", nil)
	require.NotContains(t, fmt.Sprint(err), "is not on this agent's Engine")
	require.Equal(t, int64(1), hits.Load())
}
