package api_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
)

// The tunnel routes (issue 23): an agent's ensure and ready, the
// operator's status, connect status and active list with the role row,
// validation with the field, scope, admin-only recover, and a
// quarantined device refused and torn down.
func TestTunnelRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "tunnels")
	a := f.enrolled(t, admin, site, "tun-01")
	key, err := wgnet.GenerateKey()
	require.NoError(t, err)

	ens := a.device(t, "POST", proto.PathVPNEnsure, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.Equal(t, 200, ens.Status, ens.Raw)
	require.Equal(t, "10.213.0.2", ens.Body["virtual_ip"])
	require.Equal(t, "10.213.0.1", ens.Body["engine_ip"])
	require.NotEmpty(t, ens.Body["server_public_key"])
	require.NotContains(t, ens.Raw, "private")
	again := a.device(t, "POST", proto.PathVPNEnsure, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.Equal(t, ens.Body["tunnel_id"], again.Body["tunnel_id"], "one persistent tunnel per device")

	bad := []struct {
		name, path string
		body       any
		field      string
	}{
		{"ensure without a key", proto.PathVPNEnsure, map[string]any{}, "public_key"},
		{"ensure with a short key", proto.PathVPNEnsure, map[string]any{"public_key": "AAAA"}, "public_key"},
		{"ready for another tunnel", proto.PathVPNReady, map[string]any{"tunnel_id": "6f7c2f5e-0000-4000-8000-000000000001"}, "tunnel_id"},
		{"ready without a handshake", proto.PathVPNReady, map[string]any{"tunnel_id": ens.Body["tunnel_id"], "ready": true}, "last_handshake_at"},
		{"ready with another role", proto.PathVPNReady, map[string]any{"tunnel_id": ens.Body["tunnel_id"],
			"role": map[string]any{"key": "system:vnc", "observed": "Healthy"}}, "role.key"},
		{"ready with a bad role", proto.PathVPNReady, map[string]any{"tunnel_id": ens.Body["tunnel_id"],
			"role": map[string]any{"key": proto.RoleKeyVPNTunnel, "observed": "Fine"}}, "role.observed"},
	}
	for _, c := range bad {
		r := a.device(t, "POST", c.path, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], c.name)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}

	now := time.Now().UTC()
	role := proto.RoleHealth{Key: proto.RoleKeyVPNTunnel, Desired: "running", Observed: proto.RoleHealthy, LastCheckedAt: now,
		LastHealthyAt: &now, Context: map[string]string{"virtual_ip": "10.213.0.2", "tunnel_id": ens.Body["tunnel_id"].(string), "agent_id": "agent-1"}}
	rd := a.device(t, "POST", proto.PathVPNReady, proto.VPNReadyRequest{TunnelID: ens.Body["tunnel_id"].(string), Ready: true,
		LastHandshakeAt: &now, Endpoint: "192.0.2.10:51820", Mode: "wireguard-go", Role: &role})
	require.Equal(t, 200, rd.Status, rd.Raw)
	require.Equal(t, true, rd.Body["healthy"])

	st := f.do(t, "GET", "/api/tunnel/status?guid="+a.guid, admin, nil)
	require.Equal(t, 200, st.Status, st.Raw)
	tun := st.Body["tunnel"].(map[string]any)
	require.Equal(t, "192.0.2.10:51820", tun["endpoint"])
	require.Equal(t, map[string]any{"virtual_ip": "10.213.0.2", "tunnel_id": ens.Body["tunnel_id"], "agent_id": "agent-1"},
		tun["role"].(map[string]any)["context"])
	eng := st.Body["engine"].(map[string]any)
	require.Equal(t, ens.Body["server_public_key"], eng["public_key"])
	require.Equal(t, float64(1), eng["active_tunnels"])
	// The Engine's side alone.
	require.Equal(t, 200, f.do(t, "GET", "/api/tunnel/status", admin, nil).Status)

	act := f.do(t, "GET", "/api/tunnel/active", admin, nil)
	require.Equal(t, 200, act.Status, act.Raw)
	require.Len(t, act.Body["tunnels"], 1)

	cs := f.do(t, "GET", "/api/tunnel/connect/status?guid="+a.guid, admin, nil)
	require.Equal(t, 200, cs.Status, cs.Raw)
	require.Nil(t, cs.Body["establishment"], "never established through the workflow")
	for _, q := range []struct{ query, field string }{{"", "guid"}, {"?guid=" + a.guid + "&port=0", "port"}, {"?guid=" + a.guid + "&port=x", "port"}} {
		r := f.do(t, "GET", "/api/tunnel/connect/status"+q.query, admin, nil)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field(q.field), r.Raw)
	}

	// An operator without the device's site sees none of it.
	op := f.operator(t, "tunnel-operator")
	require.Equal(t, 404, f.do(t, "GET", "/api/tunnel/status?guid="+a.guid, op, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/tunnel/connect/status?guid="+a.guid, op, nil).Status)
	require.Len(t, f.do(t, "GET", "/api/tunnel/active", op, nil).Body["tunnels"], 0)
	require.Equal(t, 403, f.do(t, "POST", "/api/server/wireguard/recover", op, map[string]any{"guid": a.guid}).Status)
	r := f.do(t, "POST", "/api/server/wireguard/recover", admin, map[string]any{"guid": "no-such-device"})
	require.Equal(t, 404, r.Status, r.Raw)
	// An agent that does not report the tunnel capability is not asked.
	old := f.capsAgent(t, admin, site, "tun-old", proto.CapabilitiesVersion, []proto.Capability{proto.CapProcesses})
	r = f.do(t, "POST", "/api/server/wireguard/recover", admin, map[string]any{"guid": old.guid})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "agent_too_old", r.Body["error"])
	require.Contains(t, r.Body["message"], `"tunnel"`)

	// Quarantine: recover is refused, the agent's calls are refused, and
	// the tunnel is torn down by the trust action's workflow.
	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	r = f.do(t, "POST", "/api/server/wireguard/recover", admin, map[string]any{"guid": a.guid})
	require.Equal(t, "device_quarantined", r.Body["error"], r.Raw)
	r = a.device(t, "POST", proto.PathVPNEnsure, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.Contains(t, []any{"device_quarantined", "token_version_mismatch"}, r.Body["error"], "the agent's calls are refused: %s", r.Raw)
	require.Len(t, f.do(t, "GET", "/api/tunnel/active", admin, nil).Body["tunnels"], 0, "a quarantined device has no active tunnel")
	require.Eventually(t, func() bool {
		return f.do(t, "GET", "/api/tunnel/status?guid="+a.guid, admin, nil).Body["error"] == "tunnel_not_found"
	}, 60*time.Second, 100*time.Millisecond, "the trust action tears the tunnel down")
}
