package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/internalauth"
)

// signedCall sends a request signed under key to base+path and answers
// the status, the body and the request (to send again).
func signedCall(t *testing.T, base, method, path string, body []byte, keyID string, key []byte) (int, string, *http.Request) {
	t.Helper()
	r, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	internalauth.Sign(r, body, keyID, key, time.Now())
	return sendAgain(t, r, body)
}

func sendAgain(t *testing.T, r *http.Request, body []byte) (int, string, *http.Request) {
	t.Helper()
	again := r.Clone(context.Background())
	again.Body = io.NopCloser(bytes.NewReader(body))
	again.ContentLength = int64(len(body))
	res, err := http.DefaultClient.Do(again)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), r
}

// Issue 26, the gateway as a process of its own: `cairn serve` with
// CAIRN_GATEWAY_URL binds no WireGuard; `cairn gateway`, started without
// DATABASE_URL and holding only an Internal key, takes the Engine's
// WireGuard through vpn-prepare (the private key sealed to its own key)
// and its peers through vpn-sessions, and a real agent in its own network
// namespace establishes its tunnel with it. A VNC session's socket goes
// from the browser to serve (same origin, one-time token) and is relayed
// to the gateway, which authenticates to x11vnc with the credential the
// agent sealed to it and reports attached and first_frame through the
// signed POST /api/internal/vnc/session-event, which records
// first_frame_at. Replayed and tampered Internal requests are refused,
// at the Engine and at the gateway's listener.
func TestVNCThroughGatewayProcess(t *testing.T) {
	t.Parallel()
	rig := newTunnelRig(t, rigOptions{hostname: "e2e-gw", slug: "gw-e2e", network: "10.234.0.0/24", gateway: true,
		agentEnv: func(t *testing.T, ns *netns) []string {
			return []string{"DISPLAY=" + startXvfb(t, ns, "#00ff00")}
		}})
	eng, token, guid := rig.eng, rig.token, rig.guid

	// The gateway holds the lease; this serve replica binds nothing.
	st := eng.call(t, "GET", "/api/tunnel/status", token, nil)["engine"].(map[string]any)
	require.Equal(t, "gateway:"+rig.keyID, st["owner"], "%v", st)
	require.Equal(t, true, st["owner_live"])
	require.Equal(t, false, st["this_replica"])
	viewers := eng.call(t, "GET", "/api/vnc/viewers", token, nil)
	require.Equal(t, true, viewers["available"], "%v", viewers)
	// A probe through the gateway reads x11vnc's banner once the session
	// starts it; before, the tunnel's own address answers through it.
	require.Equal(t, "10.234.0.2", rig.vip)

	est := eng.post(t, "/api/vnc/establish", token, map[string]any{"guid": guid})
	require.NotEmpty(t, est["session_id"], "%v; agent:\n%s\ngateway:\n%s", est, rig.a.output(), rig.gatewayOut)
	sessionID := est["session_id"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(eng.httpsBase, "https")+est["ws_url"].(string),
		&websocket.DialOptions{HTTPClient: eng.httpsClient(t), HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
			Subprotocols: []string{"binary"}})
	require.NoError(t, err)
	defer ws.CloseNow()
	c := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	banner := make([]byte, 12)
	_, err = io.ReadFull(c, banner)
	require.NoError(t, err, "gateway:\n%s", rig.gatewayOut)
	require.Equal(t, "RFB 003.008\n", string(banner))
	_, err = c.Write(banner)
	require.NoError(t, err)
	types := make([]byte, 2)
	_, err = io.ReadFull(c, types)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 1}, types, "one security type, None: the gateway did the VNC authentication")
	_, err = c.Write([]byte{1})
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 4))
	require.NoError(t, err)
	_, err = c.Write([]byte{1})
	require.NoError(t, err)
	init := make([]byte, 24)
	_, err = io.ReadFull(c, init)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 160, 0, 120}, init[:4], "ServerInit of the agent's display")
	_, err = io.ReadFull(c, make([]byte, binary.BigEndian.Uint32(init[20:24])))
	require.NoError(t, err)
	_, err = c.Write([]byte{3, 0, 0, 0, 0, 0, 0, 160, 0, 120})
	require.NoError(t, err)
	head := make([]byte, 4)
	_, err = io.ReadFull(c, head)
	require.NoError(t, err)
	for head[0] == 3 { // ServerCutText before the frame
		rest := make([]byte, 4)
		_, err = io.ReadFull(c, rest)
		require.NoError(t, err)
		_, err = io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(rest)))
		require.NoError(t, err)
		_, err = io.ReadFull(c, head)
		require.NoError(t, err)
	}
	require.Equal(t, byte(0), head[0], "a FramebufferUpdate through the gateway process")

	// first_frame_at came through the signed session-event route: the
	// audit trail names the gateway's key for the session's events.
	require.True(t, assertEventually(time.Minute, func() bool {
		s := eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil)
		return s["first_frame_at"] != nil && s["status"] == "live"
	}), "first_frame_at recorded; gateway:\n%s", rig.gatewayOut)
	audit := eng.rawCall(t, "GET", "/api/server/audit?limit=200", token, nil)
	require.Equal(t, 200, audit.status, audit.body)
	require.Contains(t, audit.body, "internal:"+rig.keyID)
	for _, ev := range []string{"attached", "first_frame"} {
		require.Contains(t, audit.body, "session="+sessionID+" event="+ev)
	}

	// Replay and tamper at the Engine: a signed event verifies once.
	body, _ := json.Marshal(map[string]any{"session_id": sessionID, "event": "first_frame"})
	status, out, req := signedCall(t, eng.base, "POST", "/api/internal/vnc/session-event", body, rig.keyID, rig.keySecret)
	require.Equal(t, 200, status, out)
	status, out, _ = sendAgain(t, req, body)
	require.Equal(t, 401, status, out)
	require.Contains(t, out, internalauth.ECodeSignatureReplayed)
	tampered, _ := json.Marshal(map[string]any{"session_id": sessionID, "event": "detached"})
	status, out, _ = signedCall(t, eng.base, "POST", "/api/internal/vnc/session-event", body, rig.keyID, rig.keySecret)
	require.Equal(t, 200, status, out)
	r, err := http.NewRequest("POST", eng.base+"/api/internal/vnc/session-event", bytes.NewReader(body))
	require.NoError(t, err)
	internalauth.Sign(r, body, rig.keyID, rig.keySecret, time.Now())
	status, out, _ = sendAgain(t, r, tampered)
	require.Equal(t, 401, status, out)
	require.Contains(t, out, internalauth.ECodeSignatureInvalid)

	// At the gateway's listener: unsigned, signed with the key itself
	// (what the gateway signs with, not the Engine's derived key), and a
	// replay of the Engine's kind of request are refused.
	gw := "http://" + rig.gatewayAddr
	dialPath := "/gateway/v1/dial?guid=" + guid + "&port=5900"
	res, err := http.Get(gw + dialPath)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 401, res.StatusCode)
	status, out, _ = signedCall(t, gw, "GET", dialPath, nil, rig.keyID, rig.keySecret)
	require.Equal(t, 401, status, out)
	require.Contains(t, out, internalauth.ECodeSignatureInvalid)
	derived := internalauth.Derive(rig.keySecret, internalauth.PurposeToGateway)
	// Signed right but not a WebSocket upgrade: verified (then refused
	// for the missing upgrade), so its replay meets the seen-cache.
	status, _, req = signedCall(t, gw, "GET", dialPath, nil, rig.keyID, derived)
	require.NotEqual(t, 401, status)
	status, out, _ = sendAgain(t, req, nil)
	require.Equal(t, 401, status, out)
	require.Contains(t, out, internalauth.ECodeSignatureReplayed)

	// No secret in the gateway's output.
	require.NotContains(t, rig.gatewayOut.String(), base64Std(rig.keySecret))

	// Disconnect ends the session.
	eng.post(t, "/api/vnc/disconnect", token, map[string]any{"session_id": sessionID})
	require.True(t, assertEventually(time.Minute, func() bool {
		return eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil)["status"] == "ended"
	}), "the session ended")

	// The gateway refuses to start with database credentials.
	bad := cairnCmd([]string{"DATABASE_URL=postgres://x@localhost/x", "CAIRN_INTERNAL_KEY_ID=" + rig.keyID,
		"CAIRN_ENGINE_URL=" + eng.base}, "gateway")
	msg, err := bad.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", msg)
	require.Contains(t, string(msg), "takes no DATABASE_URL")
}

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
