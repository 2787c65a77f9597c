package devices_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
)

func roleByKey(t *testing.T, h devices.AgentHealth, key string) devices.Role {
	t.Helper()
	for _, r := range append(append([]devices.Role{}, h.AgentConnection...), h.Roles...) {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("no role %s", key)
	return devices.Role{}
}

func health(t *testing.T, f *fixture, hostname string) devices.FullDetails {
	t.Helper()
	d, err := f.svc.DetailsByHostname(context.Background(), cairn.AllSites, hostname)
	require.NoError(t, err)
	return d
}

// A status post records last_seen and last_status, upserts the startup
// timeline row and the reported roles, and emits agent_status_changed for
// the device's site.
func TestStatusUpsertsTheTimelineAndEmits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	id := f.device(t, "g1", "alpha")
	started := f.clock.Now().Add(-time.Minute)
	healthyAt := started.Add(30 * time.Second)
	st := proto.Status{Phase: "starting", BootID: "boot-1", AgentVersion: "1.0.0", StartedAt: started,
		Milestones: []proto.Milestone{{Name: "config_loaded", At: started, OK: true}, {Name: "tls_ready", At: started, OK: false, Detail: "no CA"}},
		LastError:  &proto.Telemetry{Message: "dial tcp: refused", At: started, Source: "transport"},
		Roles: []proto.RoleHealth{
			{Key: proto.RoleKeyDeviceAudit, Desired: "running", Observed: proto.RoleHealthy, LastCheckedAt: started, LastHealthyAt: &healthyAt},
			{Key: proto.RoleKeyVPNTunnel, Desired: "running", Observed: proto.RoleRecovering, LastError: "no handshake", RecoveryAttempts: 2,
				Context: map[string]string{"virtual_ip": "10.99.0.2", "tunnel_id": "t-1", "agent_id": "a-1"}},
		}}
	require.NoError(t, f.svc.Status(ctx, id, st))

	row := f.row(t, "g1")
	require.Equal(t, f.clock.Now(), row.LastSeen.UTC())
	require.Equal(t, "1.0.0", row.AgentVersion)
	require.Equal(t, "boot-1", row.BootID)
	var last map[string]any
	require.NoError(t, json.Unmarshal(row.LastStatus, &last))
	require.Equal(t, "starting", last["phase"])
	require.Len(t, last["milestones"], 2)

	d := health(t, f, "ALPHA")
	require.NotNil(t, d.Health.Startup)
	su := d.Health.Startup
	require.Equal(t, proto.RoleKeyStartup, su.Key)
	require.Equal(t, proto.RoleUnhealthy, su.Observed, "a failed milestone makes the timeline unhealthy")
	require.Equal(t, "dial tcp: refused", su.LastError)
	var timeline map[string]any
	require.NoError(t, json.Unmarshal(su.Context, &timeline))
	require.Equal(t, "startup", timeline["context"])
	require.Equal(t, "starting", timeline["phase"])
	require.Equal(t, "boot-1", timeline["boot_id"])
	require.Len(t, timeline["milestones"], 2)
	require.Equal(t, "dial tcp: refused", timeline["last_error"].(map[string]any)["message"])

	audit := roleByKey(t, d.Health, proto.RoleKeyDeviceAudit)
	require.Equal(t, proto.RoleHealthy, audit.Observed)
	require.Equal(t, healthyAt, audit.LastHealthyAt.UTC())
	require.Len(t, d.Health.Roles, 1, "connection roles are not repeated under roles")
	require.Len(t, d.Health.AgentConnection, 1)
	tunnel := d.Health.AgentConnection[0]
	require.Equal(t, proto.RoleRecovering, tunnel.Observed)
	require.Equal(t, int32(2), tunnel.RecoveryAttempts)
	require.JSONEq(t, `{"virtual_ip":"10.99.0.2","tunnel_id":"t-1","agent_id":"a-1"}`, string(tunnel.Context))
	require.Equal(t, f.clock.Now(), tunnel.LastCheckedAt.UTC(), "a missing check time is the Engine's receipt time")

	evs := f.events.take()
	require.Len(t, evs, 1)
	require.Equal(t, events.TypeAgentStatusChanged, evs[0].Type)
	require.Equal(t, cairn.SiteID(f.siteID), evs[0].SiteID)
	require.JSONEq(t, `{"guid":"g1","hostname":"alpha","site_id":`+jsonInt(f.siteID)+`,"phase":"starting"}`, string(evs[0].Data))

	// The next post replaces the rows; a role without a healthy time keeps
	// the one it had.
	f.clock.Advance(time.Minute)
	st.Phase, st.LastError = "running", nil
	st.Milestones = []proto.Milestone{{Name: "connected", At: f.clock.Now(), OK: true}}
	st.Roles = []proto.RoleHealth{{Key: proto.RoleKeyDeviceAudit, Desired: "running", Observed: proto.RoleUnhealthy}}
	require.NoError(t, f.svc.Status(ctx, id, st))
	d = health(t, f, "alpha")
	require.Equal(t, proto.RoleHealthy, d.Health.Startup.Observed)
	require.Equal(t, f.clock.Now(), d.Health.Startup.LastHealthyAt.UTC())
	require.Empty(t, d.Health.Startup.LastError)
	audit = roleByKey(t, d.Health, proto.RoleKeyDeviceAudit)
	require.Equal(t, proto.RoleUnhealthy, audit.Observed)
	require.Equal(t, healthyAt, audit.LastHealthyAt.UTC())
	require.Equal(t, []string{events.TypeAgentStatusChanged}, f.events.types())
}

func TestStatusRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.device(t, "g", "h")
	ok := proto.RoleHealth{Key: proto.RoleKeyVNC, Observed: proto.RoleHealthy}
	for _, tc := range []struct {
		field string
		st    proto.Status
	}{
		{"phase", proto.Status{}},
		{"phase", proto.Status{Phase: "Running Now"}},
		{"milestones[0].name", proto.Status{Phase: "running", Milestones: []proto.Milestone{{}}}},
		{"roles[1].key", proto.Status{Phase: "running", Roles: []proto.RoleHealth{ok, {Key: "vnc", Observed: proto.RoleHealthy}}}},
		{"roles[0].key", proto.Status{Phase: "running", Roles: []proto.RoleHealth{{Key: proto.RoleKeyStartup, Observed: proto.RoleHealthy}}}},
		{"roles[0].observed", proto.Status{Phase: "running", Roles: []proto.RoleHealth{{Key: proto.RoleKeyVNC, Observed: "fine"}}}},
		{"roles[0].recovery_attempts", proto.Status{Phase: "running", Roles: []proto.RoleHealth{{Key: proto.RoleKeyVNC, Observed: proto.RoleHealthy, RecoveryAttempts: -1}}}},
	} {
		err := f.svc.Status(context.Background(), id, tc.st)
		var e *cairn.Error
		require.ErrorAs(t, err, &e, tc.field)
		require.Contains(t, e.Fields, tc.field)
	}
	require.Empty(t, f.events.take())
	require.Nil(t, f.row(t, "g").LastSeen)
}

// A device that no longer exists (purged after its token was checked) is
// not_found, and nothing is emitted.
func TestStatusOfAnUnknownDevice(t *testing.T) {
	t.Parallel()
	f := setup(t)
	err := f.svc.Status(context.Background(), devicetrust.Identity{GUID: "gone"}, proto.Status{Phase: "running"})
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "%v", err)
	require.Empty(t, f.events.take())
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
