package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// An enrolled agent's callbacks through HTTP: the startup timeline, a
// heartbeat, a details post; the device then shows Connected with its
// inventory, and its activity holds the enrollment and trust actions.
func TestAgentCallbacksOverHTTP(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "callbacks")
	a := f.enrolled(t, admin, site, "cb-01")

	st := a.device(t, "POST", proto.PathStatus, proto.Status{Phase: "starting", BootID: "boot-1", AgentVersion: "1.2.3",
		StartedAt: time.Now().UTC(), Milestones: []proto.Milestone{{Name: "config_loaded", At: time.Now().UTC(), OK: true}}})
	require.Equal(t, 204, st.Status, st.Raw)
	hb := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "1.2.3", BootID: "boot-1",
		Metrics: proto.Metrics{CPUPercent: 3, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 4 << 30, UptimeSeconds: 99, LoggedInUsers: []string{}}})
	require.Equal(t, 200, hb.Status, hb.Raw)
	require.EqualValues(t, 20, hb.Body["interval_seconds"])
	require.NotNil(t, hb.Body["metadata_field_acks"])
	inv := proto.Inventory{
		OS:       &proto.OSInfo{Family: "linux", Name: "Debian GNU/Linux 12 (bookworm)", KernelVersion: "6.1.0"},
		Software: []proto.Software{{Name: "bash", Version: "5.2.15", Source: "dpkg"}},
		Services: []proto.Service{{Name: "ssh.service", State: "running", SubState: "running"}},
		Network:  []proto.NetIface{}, Sessions: []proto.Session{}, Processes: []proto.Process{}, Patches: []proto.PatchEntry{},
	}
	d := a.device(t, "POST", proto.PathDetails, proto.Details{Hash: "h1", CollectedAt: time.Now().UTC(), Inventory: inv})
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, true, d.Body["changed"])
	require.Equal(t, false, a.device(t, "POST", proto.PathDetails, proto.Details{Hash: "h1", CollectedAt: time.Now().UTC(), Inventory: inv}).Body["changed"])

	// Connected needs a recent heartbeat (flushed in the background) and a
	// registered socket.
	c := a.connect(t)
	defer c.CloseNow()
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", "/api/devices/"+a.guid, admin, nil)
		return r.Status == 200 && r.Body["connectivity_status"] == "Connected"
	}, 15*time.Second, 100*time.Millisecond)
	details := f.do(t, "GET", "/api/device/details/cb-01", admin, nil)
	require.Equal(t, 200, details.Status, details.Raw)
	require.Contains(t, details.Raw, "Debian GNU/Linux 12 (bookworm)")
	require.Contains(t, details.Raw, "ssh.service")
	require.Contains(t, details.Raw, "system:system_heartbeat")

	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	// The DeviceTrustAction workflow records the action after the answer;
	// the bound only keeps a broken worker from hanging the test.
	var act response
	require.Eventually(t, func() bool {
		act = f.do(t, "GET", "/api/device/activity/cb-01", admin, nil)
		return act.Status == 200 && strings.Contains(act.Raw, "Quarantined by admin")
	}, 60*time.Second, 50*time.Millisecond, "the quarantine is recorded")
	require.Contains(t, act.Raw, "device_enrolled")
	require.Contains(t, act.Raw, "device_quarantine")

	// Agent traffic stays out of the operators' audit trail.
	audit := f.do(t, "GET", "/api/server/audit", admin, nil)
	require.Equal(t, 200, audit.Status, audit.Raw)
	require.NotContains(t, audit.Raw, proto.PathHeartbeat)
	require.Contains(t, audit.Raw, "/api/devices/{guid}/quarantine")
}

// The device-token key is sealed (issue 13 item 14): with the cipher
// locked a replica still checks device tokens (by the stored public half)
// but mints none, and issues no enrollment nonce, until it is unlocked.
func TestLockedReplicaChecksButDoesNotMintDeviceTokens(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "locked")
	a := f.enrolled(t, admin, site, "locked-01")
	row, err := f.store.ServerKeyGet(t.Context(), "device-token-ed25519")
	require.NoError(t, err)
	require.Nil(t, row.Key, "no plaintext key is stored")
	require.NotEmpty(t, row.KeySealed)

	f.engine.cipher.Lock()
	st := a.device(t, "POST", proto.PathStatus, proto.Status{Phase: "starting", BootID: "boot-1", AgentVersion: "1.2.3",
		StartedAt: time.Now().UTC()})
	require.Equal(t, 204, st.Status, st.Raw)
	r := a.doRefresh(t)
	require.Equal(t, 423, r.Status, r.Raw)
	require.Equal(t, "aegis_locked", r.Body["error"])
	r = a.send(t, "POST", proto.PathEnrollNonce, nil, false, "")
	require.Equal(t, 423, r.Status, r.Raw)

	require.NoError(t, f.engine.cipher.Unlock(t.Context(), passphrase))
	r = a.doRefresh(t)
	require.Equal(t, 200, r.Status, r.Raw)
	st = a.device(t, "POST", proto.PathStatus, proto.Status{Phase: "running", BootID: "boot-1", AgentVersion: "1.2.3",
		StartedAt: time.Now().UTC()})
	require.Equal(t, 204, st.Status, st.Raw)
}
