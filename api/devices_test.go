package api_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// deviceState is what a fixture device looks like: durations are ages
// relative to now (nil: never).
type deviceState struct {
	seen, socket *time.Duration
	os, version  string
	helpers      []string
}

func ago(d time.Duration) *time.Duration { return &d }

// addDevice inserts a device the way enrollment, heartbeats and the socket
// runtime would leave it, and returns its identity for the callbacks.
func (f *fixture) addDevice(t *testing.T, guid, hostname string, siteID int64, st deviceState) devicetrust.Identity {
	t.Helper()
	ctx := context.Background()
	_, err := f.store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: hostname, SiteID: cairn.SiteID(siteID)})
	require.NoError(t, err)
	now := time.Now()
	p := db.DeviceFixtureUpdateParams{Guid: cairn.DeviceGUID(guid), AgentID: "agent-" + guid, OperatingSystem: st.os, AgentVersion: st.version,
		HelperContexts: st.helpers}
	if p.HelperContexts == nil {
		p.HelperContexts = []string{}
	}
	if st.seen != nil {
		at := now.Add(-*st.seen)
		p.LastSeen = &at
	}
	if st.socket != nil {
		at, replica := now.Add(-*st.socket), "replica-1"
		p.SocketSeenAt, p.SocketReplica = &at, &replica
	}
	require.NoError(t, f.store.DeviceFixtureUpdate(ctx, p))
	return devicetrust.Identity{GUID: cairn.DeviceGUID(guid), Hostname: hostname, SiteID: cairn.SiteID(siteID)}
}

// fleet is two sites with one device of each connection status.
type fleet struct {
	admin        string
	siteA, siteB int64
}

func (f *fixture) fleet(t *testing.T) fleet {
	t.Helper()
	fl := fleet{admin: f.sudo(t, f.admin(t))}
	fl.siteA = f.createSite(t, fl.admin, "alpha")
	fl.siteB = f.createSite(t, fl.admin, "beta")
	f.addDevice(t, "guid-conn", "conn-host", fl.siteA, deviceState{seen: ago(5 * time.Second), socket: ago(5 * time.Second),
		os: "Debian GNU/Linux 12 (bookworm)", version: "1.2.0", helpers: []string{"currentuser"}})
	f.addDevice(t, "guid-disc", "disc-host", fl.siteA, deviceState{seen: ago(10 * time.Second), version: "1.1.0"})
	f.addDevice(t, "guid-off", "off-host", fl.siteB, deviceState{seen: ago(10 * time.Minute), socket: ago(5 * time.Second)})
	f.addDevice(t, "guid-never", "never-host", fl.siteB, deviceState{})
	return fl
}

func hostnames(t *testing.T, r response, key string) []string {
	t.Helper()
	require.Equal(t, 200, r.Status, r.Raw)
	var out []string
	for _, d := range r.Body[key].([]any) {
		out = append(out, d.(map[string]any)["hostname"].(string))
	}
	sort.Strings(out)
	return out
}

func TestDeviceListShapeAndFilters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	r := f.do(t, "GET", "/api/devices", fl.admin, nil)
	require.Equal(t, []string{"conn-host", "disc-host", "never-host", "off-host"}, hostnames(t, r, "devices"))
	require.Equal(t, float64(90), r.Body["online_window_seconds"])
	byHost := map[string]map[string]any{}
	for _, d := range r.Body["devices"].([]any) {
		byHost[d.(map[string]any)["hostname"].(string)] = d.(map[string]any)
	}
	conn := byHost["conn-host"]
	keys := make([]string, 0, len(conn))
	for k := range conn {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"agent_build_id", "agent_id", "agent_socket", "agent_version", "connectivity_status", "description", "guid", "hostname",
		"last_seen", "metadata_fields", "operating_system", "site_id", "site_name", "trust_state"}, keys)
	require.Equal(t, "guid-conn", conn["guid"])
	require.Equal(t, "agent-guid-conn", conn["agent_id"])
	require.Equal(t, float64(fl.siteA), conn["site_id"])
	require.Equal(t, "alpha", conn["site_name"])
	require.Equal(t, "Debian GNU/Linux 12 (bookworm)", conn["operating_system"])
	require.Equal(t, "1.2.0", conn["agent_version"])
	require.Equal(t, "active", conn["trust_state"])
	require.Equal(t, map[string]any{}, conn["metadata_fields"])
	for host, want := range map[string][2]any{
		"conn-host": {"Connected", true}, "disc-host": {"Disconnected", false},
		"off-host": {"Offline", true}, "never-host": {"Offline", false},
	} {
		require.Equal(t, want[0], byHost[host]["connectivity_status"], host)
		require.Equal(t, want[1], byHost[host]["agent_socket"], host)
	}
	require.Nil(t, byHost["never-host"]["last_seen"])

	siteA, siteB := strconv.FormatInt(fl.siteA, 10), strconv.FormatInt(fl.siteB, 10)
	for query, want := range map[string][]string{
		"status=connected":                             {"conn-host"},
		"status=DISCONNECTED":                          {"disc-host"},
		"status=Offline":                               {"never-host", "off-host"},
		"site_id=" + siteA:                             {"conn-host", "disc-host"},
		"site=" + siteB + "&status=offline":            {"never-host", "off-host"},
		"site=" + siteA + "&status=offline":            nil,
		"site_id=" + siteB + "&status=connected":       nil,
		"site_id=999999":                               nil,
		"site_id=" + siteA + "&status=%20Connected%20": {"conn-host"},
	} {
		require.Equal(t, want, hostnames(t, f.do(t, "GET", "/api/devices?"+query, fl.admin, nil), "devices"), query)
	}
	for query, field := range map[string]string{
		"status=online": "status", "status=connected,offline": "status",
		"site_id=abc": "site_id", "site_id=0": "site_id", "site=-2": "site_id",
	} {
		r := f.do(t, "GET", "/api/devices?"+query, fl.admin, nil)
		require.Equal(t, 400, r.Status, query)
		require.Equal(t, "validation_failed", r.Body["error"])
		require.NotEmpty(t, r.field(field), query)
	}
}

// /api/agents lists the online collectors: a fresh heartbeat, with or
// without a socket, as the privileged record with its helper contexts.
func TestAgentsListsOnlineCollectors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	r := f.do(t, "GET", "/api/agents", fl.admin, nil)
	require.Equal(t, []string{"conn-host", "disc-host"}, hostnames(t, r, "agents"))
	agents := r.Body["agents"].([]any)
	conn := agents[0].(map[string]any)
	require.Equal(t, "conn-host", conn["hostname"])
	require.Equal(t, "privileged", conn["context"])
	require.Equal(t, []any{"currentuser"}, conn["helper_contexts"])
	require.Equal(t, true, conn["agent_socket"])
	require.Equal(t, "Connected", conn["connectivity_status"])
	require.NotEmpty(t, conn["site_worker_slug"])
	disc := agents[1].(map[string]any)
	require.Equal(t, []any{}, disc["helper_contexts"])
	require.Equal(t, false, disc["agent_socket"])
}

func TestDeviceSearch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	f.addDevice(t, "guid-host", "HOST", fl.siteA, deviceState{})
	r := f.do(t, "GET", "/api/devices/search?hostname=HoSt", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	found := r.Body["devices"].([]any)
	require.Len(t, found, 5)
	require.Equal(t, "HOST", found[0].(map[string]any)["hostname"], "an exact match comes first")
	require.Equal(t, false, r.Body["truncated"])
	for _, d := range found {
		for _, k := range []string{"operating_system", "agent_socket", "connectivity_status"} {
			require.Contains(t, d.(map[string]any), k)
		}
	}
	require.Equal(t, []string{"conn-host"}, hostnames(t, f.do(t, "GET", "/api/devices/search?hostname=CONN", fl.admin, nil), "devices"))

	r = f.do(t, "GET", "/api/devices/search?hostname=host&limit=2", fl.admin, nil)
	require.Len(t, r.Body["devices"], 2)
	require.Equal(t, true, r.Body["truncated"])

	for query, field := range map[string]string{
		"": "hostname", "hostname=": "hostname", "hostname=" + strings.Repeat("h", 256): "hostname",
		"hostname=h&limit=0": "limit", "hostname=h&limit=101": "limit",
	} {
		r := f.do(t, "GET", "/api/devices/search?"+query, fl.admin, nil)
		require.Equal(t, 400, r.Status, query)
		require.NotEmpty(t, r.field(field), query)
	}
}

func TestDeviceDescription(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	set := func(host string, body any) response {
		return f.do(t, "POST", "/api/device/description/"+host, fl.admin, body)
	}
	r := set("CONN-HOST", map[string]any{"description": "  Reception PC  "})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Reception PC", r.Body["description"])
	require.Equal(t, "conn-host", r.Body["hostname"])
	r = f.do(t, "GET", "/api/devices/guid-conn", fl.admin, nil)
	require.Equal(t, "Reception PC", r.Body["description"])

	r = set("conn-host", map[string]any{"description": strings.Repeat("é", 500)})
	require.Equal(t, 200, r.Status, "500 characters (not bytes) are allowed: %s", r.Raw)
	for name, body := range map[string]any{
		"too long":   map[string]any{"description": strings.Repeat("x", 501)},
		"newline":    map[string]any{"description": "two\nlines"},
		"missing":    map[string]any{},
		"wrong type": map[string]any{"description": 5},
	} {
		r := set("conn-host", body)
		require.Equal(t, 400, r.Status, name)
		require.NotEmpty(t, r.field("description"), name)
	}
	r = set("conn-host", map[string]any{"description": ""})
	require.Equal(t, 200, r.Status)
	require.Equal(t, "", r.Body["description"])
	r = set("nobody-host", map[string]any{"description": "x"})
	require.Equal(t, 404, r.Status)
}

// The agent callbacks feed what operators read: heartbeat metrics in the
// summary, the status timeline and roles in Agent Health, inventory in the
// details.
func TestDeviceSummaryAndDetails(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	ctx := context.Background()
	id := f.addDevice(t, "guid-feed", "Feed-Host", fl.siteA, deviceState{socket: ago(0)})
	svc := f.engine.devices
	_, err := svc.Heartbeat(ctx, id, proto.Heartbeat{AgentVersion: "2.0.0", BootID: "boot-9",
		Metrics: proto.Metrics{CPUPercent: 12.5, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 4 << 30, UptimeSeconds: 3600, LoggedInUsers: []string{"alice"}}})
	require.NoError(t, err)
	require.NoError(t, svc.Flush(ctx))
	require.NoError(t, svc.Status(ctx, id, proto.Status{Phase: "running", BootID: "boot-9", Milestones: []proto.Milestone{{Name: "connected", OK: true}},
		Roles: []proto.RoleHealth{
			{Key: proto.RoleKeyAPIWebSocket, Observed: proto.RoleHealthy}, {Key: proto.RoleKeyVPNTunnel, Observed: proto.RoleRecovering},
			{Key: proto.RoleKeyRDP, Observed: proto.RoleHealthy},
		}}))
	boot := time.Now().Add(-time.Hour)
	_, err = svc.Details(ctx, id, proto.Details{Inventory: proto.Inventory{
		OS:       &proto.OSInfo{Family: "linux", Name: "Ubuntu 24.04 LTS"},
		Uptime:   &proto.Uptime{BootTime: boot},
		Sessions: []proto.Session{{Username: "alice", Type: "x11", Active: true, HelperReady: true}},
		Software: []proto.Software{{Name: "curl", Version: "8"}},
		Patches:  []proto.PatchEntry{{KB: "kb123", Title: "Fix", State: "pending", Source: "wua_pending"}},
	}})
	require.NoError(t, err)

	r := f.do(t, "GET", "/api/devices/guid-feed", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Connected", r.Body["connectivity_status"])
	require.Equal(t, "2.0.0", r.Body["agent_version"])
	require.Equal(t, "boot-9", r.Body["boot_id"])
	require.Equal(t, "Ubuntu 24.04 LTS", r.Body["operating_system"])
	m := r.Body["metrics"].(map[string]any)
	require.Equal(t, 12.5, m["cpu_percent"])
	require.Equal(t, []any{"alice"}, m["logged_in_users"])
	require.Nil(t, f.do(t, "GET", "/api/devices/guid-never", fl.admin, nil).Body["metrics"], "no metrics before the first heartbeat")
	require.Equal(t, 404, f.do(t, "GET", "/api/devices/no-such-guid", fl.admin, nil).Status)

	r = f.do(t, "GET", "/api/device/details/FEED-HOST", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "guid-feed", r.Body["device"].(map[string]any)["guid"])
	require.Equal(t, "Ubuntu 24.04 LTS", r.Body["os"].(map[string]any)["name"])
	require.Nil(t, r.Body["hardware"], "never reported")
	require.Nil(t, r.Body["services"])
	up := r.Body["uptime"].(map[string]any)
	require.InDelta(t, 3600, up["uptime_seconds"], 60)
	session := r.Body["sessions"].([]any)[0].(map[string]any)
	require.Equal(t, true, session["helper_ready"])
	require.Equal(t, "curl", r.Body["software"].([]any)[0].(map[string]any)["name"])
	patch := r.Body["patches"].([]any)[0].(map[string]any)
	require.Equal(t, "kb:KB123", patch["patch_key"])
	require.Equal(t, "KB123", patch["kb"])
	require.Equal(t, 12.5, r.Body["metrics"].(map[string]any)["cpu_percent"])
	require.Equal(t, "running", r.Body["last_status"].(map[string]any)["phase"])
	require.NotNil(t, r.Body["collected_at"])

	health := r.Body["agent_health"].(map[string]any)
	require.Equal(t, "system:system_heartbeat", health["startup"].(map[string]any)["key"])
	require.Equal(t, "startup", health["startup"].(map[string]any)["context"].(map[string]any)["context"])
	var conn, roles []string
	for _, x := range health["agent_connection"].([]any) {
		conn = append(conn, x.(map[string]any)["role"].(string))
	}
	for _, x := range health["roles"].([]any) {
		roles = append(roles, x.(map[string]any)["role"].(string))
	}
	require.Equal(t, []string{"api_websocket", "vpn_tunnel"}, conn)
	require.Equal(t, []string{"rdp"}, roles)

	require.Equal(t, 404, f.do(t, "GET", "/api/device/details/nobody-host", fl.admin, nil).Status)
	r = f.do(t, "GET", "/api/device/details/"+strings.Repeat("h", 256), fl.admin, nil)
	require.Equal(t, 400, r.Status)
	require.NotEmpty(t, r.field("hostname"))
}
