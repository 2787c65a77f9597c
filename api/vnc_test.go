package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
)

// The remote desktop routes (issue 23, VNC): validation with the field,
// the device out of scope, without the vnc capability,
// without a tunnel (the RemoteDesktop workflow's readiness wait fails for
// good), quarantined; the agent's ensure stores the system:vnc row and
// answers the firewall scope, never a password; sessions and viewers;
// remote-ops tokens for desktop.
func TestVNCRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "vnc")
	a := f.capsAgent(t, admin, site, "vnc-01", proto.CapabilitiesVersion, []proto.Capability{proto.CapProcesses, proto.CapTunnel, proto.CapVNC})

	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no device", map[string]any{}, "guid"},
		{"two devices", map[string]any{"guid": a.guid, "hostname": "vnc-01"}, "hostname"},
		{"bad protocol", map[string]any{"guid": a.guid, "protocol": "spice"}, "protocol"},
		{"bad quality", map[string]any{"guid": a.guid, "quality": "best"}, "quality"},
		{"unknown field", map[string]any{"guid": a.guid, "password": "x"}, "password"},
	} {
		r := f.do(t, "POST", "/api/vnc/establish", admin, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], c.name)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}
	// Out of scope: 404, as for a device that does not exist.
	op := f.operator(t, "vnc-operator")
	r := f.do(t, "POST", "/api/vnc/establish", op, map[string]any{"guid": a.guid})
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, 404, f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"hostname": "nope"}).Status)

	// An agent without the vnc capability is not asked (this one is not
	// a Linux agent: only those have it).
	old := f.capsAgent(t, admin, site, "vnc-old", proto.CapabilitiesVersion, []proto.Capability{proto.CapProcesses})
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": old.guid})
	require.Equal(t, 422, r.Status, r.Raw)
	require.Equal(t, "unsupported_platform", r.Body["error"])

	// No tunnel: the workflow's readiness wait fails at once with
	// tunnel_not_found and the session ends, recorded.
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid})
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, "tunnel_not_found", r.Body["error"], r.Raw)
	require.NotContains(t, r.Raw, "token")
	require.Empty(t, f.do(t, "GET", "/api/vnc/sessions", admin, nil).Body["sessions"], "the failed session is not active")
	require.Eventually(t, func() bool {
		acts := f.do(t, "GET", "/api/device/activity/vnc-01", admin, nil)
		return acts.Status == 200 && strings.Contains(acts.Raw, "Remote desktop session failed: tunnel_not_found")
	}, time.Minute, 100*time.Millisecond, "the end is in the device's activity")

	// The agent's ensure: validated, the role row stored, the scope
	// answered.
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"another role", map[string]any{"ready": true, "role": map[string]any{"key": "system:rdp", "observed": "Healthy"}}, "role.key"},
		{"bad port", map[string]any{"ready": true, "port": 70000}, "port"},
		{"bad address", map[string]any{"ready": true, "listen_address": "tunnel"}, "listen_address"},
	} {
		r := a.device(t, "POST", proto.PathVNCEnsure, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}
	now := time.Now().UTC()
	role := proto.RoleHealth{Key: proto.RoleKeyVNC, Desired: "running", Observed: proto.RoleHealthy, LastCheckedAt: now,
		LastHealthyAt: &now, Context: map[string]string{"ready": "true", "auth_verify_reason": "local_probe_disabled"}}
	ens := a.device(t, "POST", proto.PathVNCEnsure, proto.VNCEnsureRequest{Ready: true, ListenAddress: "10.213.0.2", Port: 5900, Role: &role})
	require.Equal(t, 200, ens.Status, ens.Raw)
	require.Equal(t, "10.213.0.1", ens.Body["engine_ip"])
	require.Equal(t, float64(5900), ens.Body["port"])
	require.NotContains(t, ens.Raw, "password")
	d := f.do(t, "GET", "/api/device/details/vnc-01", admin, nil)
	require.Contains(t, d.Raw, `"auth_verify_reason":"local_probe_disabled"`)

	// Sessions, viewers, disconnect.
	require.Equal(t, 200, f.do(t, "GET", "/api/vnc/sessions", admin, nil).Status)
	v := f.do(t, "GET", "/api/vnc/viewers", admin, nil)
	require.Equal(t, 200, v.Status, v.Raw)
	require.Equal(t, []any{"vnc", "rdp"}, v.Body["protocols"])
	for _, body := range []map[string]any{{}, {"session_id": "x"}} {
		r := f.do(t, "POST", "/api/vnc/disconnect", admin, body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("session_id"), r.Raw)
	}
	r = f.do(t, "POST", "/api/vnc/disconnect", admin, map[string]any{"session_id": "6f7c2f5e-0000-4000-8000-000000000001"})
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, 404, f.do(t, "GET", "/api/vnc/sessions/6f7c2f5e-0000-4000-8000-000000000001", admin, nil).Status)

	// remote-ops: a desktop token names the device for establish, once.
	tok := f.do(t, "POST", "/api/remote-ops/session", admin, map[string]any{"guid": a.guid, "capability": "desktop"})
	require.Equal(t, 200, tok.Status, tok.Raw)
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"operation_token": tok.Body["token"]})
	require.Equal(t, "tunnel_not_found", r.Body["error"], "the token named the device: %s", r.Raw)
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"operation_token": tok.Body["token"]})
	require.Equal(t, "validation_failed", r.Body["error"], "spent: %s", r.Raw)
	r = f.do(t, "POST", "/api/remote-ops/session", admin, map[string]any{"guid": old.guid, "capability": "desktop"})
	require.Equal(t, "unsupported_platform", r.Body["error"], r.Raw)

	// Quarantined: refused before anything starts.
	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])
}

// Rule 7: vnc_auth_retry is single-flight per device. While one
// establishes, another is refused vnc_auth_retry_in_progress; once it
// ended (here: disconnected while waiting for the tunnel), another is
// refused vnc_auth_retry_settling for the cooldown; both carry
// retry_after_seconds. A plain establish is never refused by it.
func TestVNCAuthRetrySingleFlight(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "vnc-retry")
	a := f.capsAgent(t, admin, site, "retry-01", proto.CapabilitiesVersion, []proto.Capability{proto.CapTunnel, proto.CapVNC})
	key, err := wgnet.GenerateKey()
	require.NoError(t, err)
	// A tunnel that never reports ready: the establishment waits.
	require.Equal(t, 200, a.device(t, "POST", proto.PathVPNEnsure, proto.VPNEnsureRequest{PublicKey: key.Public().String()}).Status)

	r := f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid, "reason": "rotate"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("reason"), r.Raw)

	first := make(chan response, 1)
	go func() {
		first <- f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid, "reason": "vnc_auth_retry"})
	}()
	var sessionID string
	require.Eventually(t, func() bool {
		list, _ := f.do(t, "GET", "/api/vnc/sessions", admin, nil).Body["sessions"].([]any)
		if len(list) == 1 {
			sessionID = list[0].(map[string]any)["session_id"].(string)
		}
		return sessionID != ""
	}, time.Minute, 50*time.Millisecond)

	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid, "reason": "vnc_auth_retry"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "vnc_auth_retry_in_progress", r.Body["error"])
	after := r.Body["retry_after_seconds"].(float64)
	require.True(t, after >= 1 && after <= 75, "%v", after)
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	// The operator gives up: the waiting establishment ends at once.
	d := f.do(t, "POST", "/api/vnc/disconnect", admin, map[string]any{"session_id": sessionID})
	require.Equal(t, 200, d.Status, d.Raw)
	one := <-first
	require.Equal(t, 410, one.Status, one.Raw)
	require.Equal(t, "vnc_session_ended", one.Body["error"])

	r = f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid, "reason": "vnc_auth_retry"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "vnc_auth_retry_settling", r.Body["error"])
	after = r.Body["retry_after_seconds"].(float64)
	require.True(t, after >= 1 && after <= 30, "the cooldown (30 s) is what is left: %v", after)
	require.Len(t, f.do(t, "GET", "/api/vnc/sessions", admin, nil).Body["sessions"], 0, "a refused retry leaves no session")
}

// POST /api/vnc/handoff: validation with the field; a session outside
// the caller's sites is 404; a session still establishing cannot be
// taken yet (vnc_backend_not_ready), an ended one answers
// vnc_session_ended, a quarantined device's is refused. (The taking over
// of a live session through a real tunnel is in cmd/cairn's
// TestVNCEndToEnd.)
func TestVNCHandoff(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "vnc-handoff")
	a := f.capsAgent(t, admin, site, "handoff-01", proto.CapabilitiesVersion, []proto.Capability{proto.CapTunnel, proto.CapVNC})
	key, err := wgnet.GenerateKey()
	require.NoError(t, err)
	// A tunnel that never reports ready: the establishment waits.
	require.Equal(t, 200, a.device(t, "POST", proto.PathVPNEnsure, proto.VPNEnsureRequest{PublicKey: key.Public().String()}).Status)

	for _, body := range []map[string]any{{}, {"session_id": "x"}} {
		r := f.do(t, "POST", "/api/vnc/handoff", admin, body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
		require.NotEmpty(t, r.field("session_id"), r.Raw)
	}
	r := f.do(t, "POST", "/api/vnc/handoff", admin, map[string]any{"session_id": "6f7c2f5e-0000-4000-8000-000000000002"})
	require.Equal(t, 404, r.Status, r.Raw)

	first := make(chan response, 1)
	go func() { first <- f.do(t, "POST", "/api/vnc/establish", admin, map[string]any{"guid": a.guid}) }()
	var sessionID string
	require.Eventually(t, func() bool {
		list, _ := f.do(t, "GET", "/api/vnc/sessions", admin, nil).Body["sessions"].([]any)
		if len(list) == 1 {
			sessionID = list[0].(map[string]any)["session_id"].(string)
		}
		return sessionID != ""
	}, time.Minute, 50*time.Millisecond)

	r = f.do(t, "POST", "/api/vnc/handoff", admin, map[string]any{"session_id": sessionID})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "vnc_backend_not_ready", r.Body["error"], "still establishing: %s", r.Raw)
	require.NotContains(t, r.Raw, "token")
	op := f.operator(t, "handoff-operator")
	r = f.do(t, "POST", "/api/vnc/handoff", op, map[string]any{"session_id": sessionID})
	require.Equal(t, 404, r.Status, "another site's operator: %s", r.Raw)
	s := f.do(t, "GET", "/api/vnc/sessions/"+sessionID, admin, nil)
	require.Equal(t, "admin", s.Body["operator"], "a refused handoff changes nothing")
	require.Equal(t, float64(0), s.Body["handoffs"])

	require.Equal(t, 200, f.do(t, "POST", "/api/vnc/disconnect", admin, map[string]any{"session_id": sessionID}).Status)
	require.Equal(t, 410, (<-first).Status)
	r = f.do(t, "POST", "/api/vnc/handoff", admin, map[string]any{"session_id": sessionID})
	require.Equal(t, 410, r.Status, r.Raw)
	require.Equal(t, "vnc_session_ended", r.Body["error"])

	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	r = f.do(t, "POST", "/api/vnc/handoff", admin, map[string]any{"session_id": sessionID})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])
}
