package api_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/events"
)

// scopedOperator is an operator assigned to site A of the fleet only.
func (f *fixture) scopedOperator(t *testing.T, fl fleet, name string) string {
	t.Helper()
	token := f.operator(t, name)
	r := f.do(t, "POST", "/api/user_site_assignments/assign", fl.admin, map[string]any{"usernames": []string{name}, "site_ids": []int64{fl.siteA}})
	require.Equal(t, 200, r.Status, r.Raw)
	return token
}

// An operator sees and touches only devices of assigned sites; a device of
// another site answers exactly like one that does not exist.
func TestDeviceRoutesEnforceSiteScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	op := f.scopedOperator(t, fl, "scoped-op")
	ctx := context.Background()
	row, err := f.engine.devices.RecordActivity(ctx, devices.NewActivity{GUID: "guid-off", Hostname: "off-host", SiteID: cairn.SiteID(fl.siteB), Kind: "k", Summary: "b"})
	require.NoError(t, err)
	mine, err := f.engine.devices.RecordActivity(ctx, devices.NewActivity{GUID: "guid-conn", Hostname: "conn-host", SiteID: cairn.SiteID(fl.siteA), Kind: "k", Summary: "a"})
	require.NoError(t, err)

	require.Equal(t, []string{"conn-host", "disc-host"}, hostnames(t, f.do(t, "GET", "/api/devices", op, nil), "devices"))
	require.Empty(t, hostnames(t, f.do(t, "GET", "/api/devices?site_id="+strconv.FormatInt(fl.siteB, 10), op, nil), "devices"))
	require.Empty(t, hostnames(t, f.do(t, "GET", "/api/devices?status=offline", op, nil), "devices"))
	require.Equal(t, []string{"conn-host", "disc-host"}, hostnames(t, f.do(t, "GET", "/api/agents", op, nil), "agents"))
	require.Equal(t, []string{"conn-host", "disc-host"}, hostnames(t, f.do(t, "GET", "/api/devices/search?hostname=host", op, nil), "devices"))

	for _, pair := range [][2]string{
		{"GET", "/api/devices/guid-off"}, {"GET", "/api/device/details/off-host"},
		{"GET", "/api/device/activity/off-host"}, {"GET", "/api/device/activity/job/" + strconv.FormatInt(row.ID, 10)},
		{"DELETE", "/api/device/activity/off-host"},
	} {
		hidden := f.do(t, pair[0], pair[1], op, nil)
		require.Equal(t, 404, hidden.Status, pair[1])
		require.Equal(t, "not_found", hidden.Body["error"])
		require.NotContains(t, hidden.Raw, "off-host")
		// The admin sees it, so the 404 above is scope, not absence.
		require.Less(t, f.do(t, pair[0], pair[1], fl.admin, nil).Status, 300, pair[1])
	}
	missing := f.do(t, "GET", "/api/device/details/missing-host", op, nil)
	hidden := f.do(t, "GET", "/api/device/details/off-host", op, nil)
	require.Equal(t, missing.Body, hidden.Body, "out of scope and missing read the same")

	r := f.do(t, "POST", "/api/device/description/disc-host", op, map[string]any{"description": "mine"})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/device/description/never-host", op, map[string]any{"description": "not mine"})
	require.Equal(t, 404, r.Status)
	require.Equal(t, "", f.do(t, "GET", "/api/devices/guid-never", fl.admin, nil).Body["description"], "an out-of-scope change changes nothing")

	r = f.do(t, "GET", "/api/device/activity/job/"+strconv.FormatInt(mine.ID, 10), op, nil)
	require.Equal(t, 200, r.Status, r.Raw)
}

// Device events reach only operators who may see the device's site.
func TestDeviceEventsFollowSiteScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	op := f.scopedOperator(t, fl, "events-op")
	adminEvents := openStream(t, f.url, fl.admin)
	opEvents := openStream(t, f.url, op)
	ctx := context.Background()
	svc := f.engine.devices
	offID := f.addDevice(t, "guid-b2", "b2-host", fl.siteB, deviceState{seen: ago(0)})
	_, err := svc.Details(ctx, offID, proto.Details{Inventory: proto.Inventory{Services: []proto.Service{{Name: "cron"}}}})
	require.NoError(t, err)
	e := next(t, adminEvents, events.TypeDeviceInventoryChanged)
	require.Equal(t, "b2-host", e.Data["hostname"])
	require.Equal(t, []any{"services"}, e.Data["parts"])
	e = next(t, adminEvents, events.TypeDeviceServicesChanged)
	require.Equal(t, "guid-b2", e.Data["guid"])

	mineID := f.addDevice(t, "guid-a2", "a2-host", fl.siteA, deviceState{seen: ago(0)})
	require.NoError(t, svc.Status(ctx, mineID, proto.Status{Phase: "running"}))
	// Events arrive in commit order: everything the operator's stream got
	// before this status event must be of their own site.
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case e := <-opEvents:
			require.NotEqual(t, "b2-host", e.Data["hostname"], "%s leaked to an operator of another site", e.Type)
			if e.Type == events.TypeAgentStatusChanged {
				require.Equal(t, "a2-host", e.Data["hostname"])
				require.Equal(t, "running", e.Data["phase"])
				done = true
			}
		case <-deadline:
			t.Fatal("the operator got no agent_status_changed for their own device")
		}
	}
	none(t, opEvents, events.TypeDeviceInventoryChanged, 500*time.Millisecond)
}
