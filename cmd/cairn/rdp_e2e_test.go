package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/rdp/rdptest"
)

// Issue 23, RDP end to end (rules 3-5): a real cairn-agent in its own
// network namespace, whose host runs a real RDP server on TCP 3389
// (freerdp-shadow-cli with NLA against a SAM file, shadowing an Xvfb
// display painted orange). First a port that accepts but does not speak
// RDP: the X.224 probe fails, the workflow sends one
// rdp_transport_recovery, probes again and fails rdp_backend_not_ready.
// Then, with the real server and a stored Machine credential, the session
// is established through the API: rdp_start, the probe through the
// tunnel, the Engine's bridge (xfreerdp on a private Xvfb, reaching the
// agent through the user-space WireGuard, exported by x11vnc); the test's
// WebSocket client, playing the browser, sees the remote desktop's
// pixels. The credential's secret is in no API answer and on no process's
// command line; a wrong password fails; disconnect stops the bridge;
// manual credentials work the same way.
func TestRDPEndToEnd(t *testing.T) {
	t.Parallel()
	rig := newTunnelRig(t, rigOptions{hostname: "e2e-rdp", slug: "rdp-e2e", network: "10.234.0.0/24"})
	eng, token, a, guid := rig.eng, rig.token, rig.a, rig.guid
	const user, secret = "rdpuser-e2e", "E2e-Rdp-Secret-91"
	mkCredential := func(name, password string) float64 {
		r := eng.post(t, "/api/credentials", token, map[string]any{"name": name, "connection_type": "Windows",
			"credential_type": "Machine", "username": user, "password": password})
		return r["credential_id"].(float64)
	}
	good := mkCredential("rdp e2e", secret)
	wrong := mkCredential("rdp e2e wrong", "Not-The-Password-3")

	// Rule 5: something listens on 3389 but is no RDP server.
	l := rig.ns.listen(t, net.JoinHostPort(rig.vip, "3389"))
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	r := eng.rawCall(t, "POST", "/api/vnc/establish", token, map[string]any{"guid": guid, "protocol": "rdp", "credential_id": good})
	require.Equal(t, 409, r.status, "%s; agent:\n%s", r.body, a.output())
	require.Contains(t, r.body, "rdp_backend_not_ready")
	require.Contains(t, r.body, "after one transport recovery")
	acts := eng.rawCall(t, "GET", "/api/device/activity/"+a.hostname, token, nil)
	require.Contains(t, acts.body, "Recover the RDP transport", "one rdp_transport_recovery was sent")
	require.Equal(t, 1, strings.Count(acts.body, "Recover the RDP transport"))
	require.NoError(t, l.Close())

	// The real server.
	rdptest.Start(t, rdptest.Options{Prefix: []string{"ip", "netns", "exec", rig.ns.name}, Colour: "#ff8000", User: user,
		Password: secret, Port: 3389, Width: 640, Height: 480})
	require.True(t, assertEventually(30*time.Second, func() bool {
		return len(listeners(t, rig.ns, 3389)) > 0
	}), "the shadow server listens")

	// A wrong password: the bridge's xfreerdp is refused.
	r = eng.rawCall(t, "POST", "/api/vnc/establish", token, map[string]any{"guid": guid, "protocol": "rdp", "credential_id": wrong})
	require.Equal(t, 502, r.status, "%s; agent:\n%s", r.body, a.output())
	require.Regexp(t, `rdp_auth_failed|rdp_connect_failed`, r.body)
	require.NotContains(t, r.body, "Not-The-Password-3")

	est := eng.post(t, "/api/vnc/establish", token, map[string]any{"guid": guid, "protocol": "rdp", "credential_id": good,
		"width": 640, "height": 480, "quality": "quality"})
	require.NotEmpty(t, est["session_id"], "%v; agent:\n%s", est, a.output())
	sessionID := est["session_id"].(string)
	require.Equal(t, "rdp", est["protocol"])
	require.Equal(t, "640x480+0+0", est["display_virtual_bounds"])
	raw, err := json.Marshal(est)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret)
	for k := range est {
		require.NotContains(t, strings.ToLower(k), "password")
	}

	// The bridge's xfreerdp got the password on its standard input: it is
	// on no process's command line.
	var xfreerdp string
	for pid, cl := range rdptest.Cmdlines(t) {
		require.NotContains(t, cl, secret, "process %s", pid)
		if strings.Contains(cl, "/u:"+user) && strings.Contains(cl, "xfreerdp") {
			xfreerdp = cl
		}
	}
	require.Contains(t, xfreerdp, "/from-stdin")
	require.Contains(t, xfreerdp, "/sec:nla")
	require.Contains(t, xfreerdp, "/v:127.0.0.1:", "xfreerdp dials the Engine's loopback relay into the tunnel")

	// The agent's role row.
	role := func() map[string]any { return rig.roleRow(t, "system:rdp") }
	rr := role()
	require.NotNil(t, rr, "the system:rdp row")
	rc := rr["context"].(map[string]any)
	require.Equal(t, "true", rc["ready"])
	require.Equal(t, "listening", rc["listener_state"])
	require.Equal(t, "not_managed", rc["firewall"])

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
	require.NoError(t, err)
	require.Equal(t, "RFB 003.008\n", string(banner))
	_, err = c.Write(banner)
	require.NoError(t, err)
	types := make([]byte, 2)
	_, err = io.ReadFull(c, types)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 1}, types, "one security type, None: the browser never sees a password")
	_, err = c.Write([]byte{1})
	require.NoError(t, err)
	result := make([]byte, 4)
	_, err = io.ReadFull(c, result)
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 0}, result)
	_, err = c.Write([]byte{1})
	require.NoError(t, err)
	// The remote desktop's orange, through RDP, the bridge and RFB.
	w, h := rdptest.AwaitColour(t, c, [3]int{0xff, 0x80, 0}, 12)
	require.Equal(t, [2]int{640, 480}, [2]int{w, h})

	require.True(t, assertEventually(time.Minute, func() bool {
		s := eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil)
		return s["first_frame_at"] != nil && s["status"] == "live" && s["protocol"] == "rdp"
	}), "first_frame_at recorded")

	// Disconnect: the workflow stops the bridge and records the end.
	eng.post(t, "/api/vnc/disconnect", token, map[string]any{"session_id": sessionID})
	require.True(t, assertEventually(time.Minute, func() bool {
		return eng.call(t, "GET", "/api/vnc/sessions/"+sessionID, token, nil)["status"] == "ended"
	}), "the session ended")
	require.True(t, assertEventually(time.Minute, func() bool {
		for _, cl := range rdptest.Cmdlines(t) {
			if strings.Contains(cl, "/u:"+user) {
				return false
			}
		}
		return true
	}), "the bridge's xfreerdp is gone")
	acts = eng.rawCall(t, "GET", "/api/device/activity/"+a.hostname, token, nil)
	require.Contains(t, acts.body, "Remote desktop session (stopped)")
	require.NotContains(t, acts.body, secret)

	// Manual credentials: held in the Engine's memory for the session,
	// handed to xfreerdp on stdin like a stored one's.
	manual := eng.post(t, "/api/vnc/establish", token, map[string]any{"guid": guid, "protocol": "rdp", "rdp_username": user,
		"rdp_password": secret, "width": 640, "height": 480})
	require.NotEmpty(t, manual["session_id"], "%v", manual)
	raw, err = json.Marshal(manual)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret)
	for pid, cl := range rdptest.Cmdlines(t) {
		require.NotContains(t, cl, secret, "process %s", pid)
	}
	eng.post(t, "/api/vnc/disconnect", token, map[string]any{"session_id": manual["session_id"]})
	require.True(t, assertEventually(time.Minute, func() bool {
		return eng.call(t, "GET", "/api/vnc/sessions/"+manual["session_id"].(string), token, nil)["status"] == "ended"
	}), "the manual session ended")
}

// listeners are the addresses listening on TCP port in the namespace.
func listeners(t *testing.T, ns *netns, port int) []string {
	t.Helper()
	out, err := execIn(ns, "ss", "-Hltn", "sport", "=", ":"+strconv.Itoa(port))
	require.NoError(t, err, "%s", out)
	var addrs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			addrs = append(addrs, f[3])
		}
	}
	return addrs
}

// execIn runs a command inside the namespace.
func execIn(ns *netns, name string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns.name, name}, args...)...).CombinedOutput()
	return string(out), err
}
