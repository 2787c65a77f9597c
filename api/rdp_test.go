package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// RDP establish (issue 23, rules 3-5): validation with the field (and the
// manual password never echoed), a stored credential of another site or
// one the operator cannot see refused before anything starts, an agent
// without the rdp capability refused, no tunnel failing the workflow's
// readiness wait, a quarantined device refused; the agent's
// /api/agent/rdp/ensure stores system:rdp and answers the firewall scope,
// never a login; viewers offer rdp where the bridge's tools are.
func TestRDPRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "rdp")
	other := f.createSite(t, admin, "rdp-other")
	a := f.capsAgent(t, admin, site, "rdp-01", proto.CapabilitiesVersion, []proto.Capability{proto.CapTunnel, proto.CapRDP})
	const secret = "Manual-Secret-77"

	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no credential", map[string]any{"guid": a.guid, "protocol": "rdp"}, "credential_id"},
		{"both", map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 1, "rdp_username": "u", "rdp_password": secret}, "credential_id"},
		{"bad credential id", map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 0}, "credential_id"},
		{"no password", map[string]any{"guid": a.guid, "protocol": "rdp", "rdp_username": "ops"}, "rdp_password"},
		{"no username", map[string]any{"guid": a.guid, "protocol": "rdp", "rdp_password": secret}, "rdp_username"},
		{"password with a line break", map[string]any{"guid": a.guid, "protocol": "rdp", "rdp_username": "ops", "rdp_password": secret + "\n/p:x"}, "rdp_password"},
		{"long domain", map[string]any{"guid": a.guid, "protocol": "rdp", "rdp_username": "ops", "rdp_password": secret, "rdp_domain": strings.Repeat("d", 256)}, "rdp_domain"},
		{"width", map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 1, "width": 100}, "width"},
		{"height", map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 1, "height": 99999}, "height"},
		{"dpi", map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 1, "dpi": 1000}, "dpi"},
		{"reason with rdp", map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 1, "reason": "vnc_auth_retry"}, "reason"},
		{"credential with vnc", map[string]any{"guid": a.guid, "credential_id": 1}, "credential_id"},
		{"manual with vnc", map[string]any{"guid": a.guid, "protocol": "vnc", "rdp_username": "u", "rdp_password": secret}, "rdp_password"},
		{"auth_probe not a boolean", map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 1, "auth_probe": "yes"}, "auth_probe"},
	} {
		r := f.do(t, "POST", "/api/vnc/establish", admin, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], c.name)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
		require.NotContains(t, r.Raw, secret, c.name)
	}

	// Stored credentials: one of another site, one global.
	mk := func(name string, siteID any) float64 {
		r := f.do(t, "POST", "/api/credentials", admin, map[string]any{"name": name, "connection_type": "Windows",
			"credential_type": "Machine", "username": "rdpuser", "password": "Stored-Secret-1", "site_id": siteID})
		require.Equal(t, 201, r.Status, r.Raw)
		return r.Body["credential_id"].(float64)
	}
	otherSite := mk("other site", other)
	global := mk("global", nil)
	r := f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": otherSite})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "rdp_credential_invalid", r.Body["error"], r.Raw)
	require.Contains(t, r.Body["message"], "another site")
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": 999999})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("credential_id"), r.Raw)
	require.Empty(t, f.do(t, "GET", "/api/vnc/sessions", admin, nil).Body["sessions"], "a refused credential makes no session")

	// An agent without the rdp capability is not asked.
	vncOnly := f.capsAgent(t, admin, site, "rdp-vnc-only", proto.CapabilitiesVersion, []proto.Capability{proto.CapTunnel, proto.CapVNC})
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": vncOnly.guid, "protocol": "rdp", "credential_id": global})
	require.Equal(t, 422, r.Status, r.Raw)
	require.Equal(t, "unsupported_platform", r.Body["error"])

	// No tunnel: the workflow's readiness wait fails at once and the
	// session ends, recorded; neither answer carries a secret.
	for _, body := range []map[string]any{
		{"guid": a.guid, "protocol": "rdp", "credential_id": global, "width": 1024, "height": 768, "quality": "quality", "auth_probe": true},
		{"guid": a.guid, "protocol": "rdp", "rdp_username": "ops", "rdp_password": secret, "rdp_domain": "CORP"},
	} {
		r = f.do(t, "POST", "/api/vnc/establish", admin, body)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, "tunnel_not_found", r.Body["error"], r.Raw)
		require.NotContains(t, r.Raw, secret)
		require.NotContains(t, r.Raw, "Stored-Secret-1")
	}
	require.Eventually(t, func() bool {
		acts := f.do(t, "GET", "/api/device/activity/rdp-01", admin, nil)
		return acts.Status == 200 && strings.Count(acts.Raw, "Remote desktop session failed: tunnel_not_found") == 2
	}, time.Minute, 100*time.Millisecond, "the ends are in the device's activity")

	// The agent's ensure: validated, the role row stored, the scope
	// answered (no tunnel yet: no agent address).
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"another role", map[string]any{"ready": true, "role": map[string]any{"key": "system:vnc", "observed": "Healthy"}}, "role.key"},
		{"bad port", map[string]any{"ready": true, "port": 70000}, "port"},
		{"long error", map[string]any{"error": strings.Repeat("e", 2001)}, "error"},
	} {
		r := a.device(t, "POST", proto.PathRDPEnsure, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}
	now := time.Now().UTC()
	role := proto.RoleHealth{Key: proto.RoleKeyRDP, Desired: "running", Observed: proto.RoleHealthy, LastCheckedAt: now,
		LastHealthyAt: &now, Context: map[string]string{"ready": "true", "listener_state": "listening", "firewall": "not_managed"}}
	ens := a.device(t, "POST", proto.PathRDPEnsure, proto.RDPEnsureRequest{Ready: true, Port: 3389, Role: &role})
	require.Equal(t, 200, ens.Status, ens.Raw)
	require.Equal(t, "10.213.0.1", ens.Body["engine_ip"])
	require.Equal(t, "", ens.Body["agent_ip"])
	require.Equal(t, float64(3389), ens.Body["port"])
	require.NotContains(t, ens.Raw, "password")
	d := f.do(t, "GET", "/api/device/details/rdp-01", admin, nil)
	require.Contains(t, d.Raw, `"firewall":"not_managed"`)

	v := f.do(t, "GET", "/api/vnc/viewers", admin, nil)
	require.Equal(t, []any{"vnc", "rdp"}, v.Body["protocols"], "this host has the bridge's tools (scripts/deps.sh)")

	// Quarantined: refused before anything starts.
	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid, "protocol": "rdp", "credential_id": global})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])
}
