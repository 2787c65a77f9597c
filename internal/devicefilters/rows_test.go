package devicefilters_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
)

// requireRowsInStep checks device_filter_rows against devices: the same
// devices, with the same values in every copied column.
func requireRowsInStep(t *testing.T, f *fixture, step string) {
	t.Helper()
	const fromDevices = `SELECT guid, site_id, lower(hostname), lower(description), lower(operating_system), lower(agent_version),
		agent_version_key, trust_state, last_seen, socket_replica, socket_seen_at FROM devices`
	const fromRows = `SELECT guid, site_id, hostname_lower, description_lower, operating_system_lower, agent_version_lower,
		agent_version_key, trust_state, last_seen, socket_replica, socket_seen_at FROM device_filter_rows`
	var devices, rows, differ int
	err := f.store.Pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM devices), (SELECT count(*) FROM device_filter_rows),
		(SELECT count(*) FROM ((`+fromDevices+` EXCEPT `+fromRows+`) UNION ALL (`+fromRows+` EXCEPT `+fromDevices+`)) x)`).Scan(&devices, &rows, &differ)
	require.NoError(t, err, step)
	require.Equal(t, devices, rows, step)
	require.Zero(t, differ, step)
}

// The totals read device_filter_rows (migration 00024), so it must follow
// every write to devices: ingest, heartbeats, operator edits, trust
// changes, site moves and deletes, each through the query the Engine runs.
func TestFilterRowsFollowDevices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	f.fleet(t)
	requireRowsInStep(t, f, "after the fleet's inserts and inventory")

	_, err := f.store.DeviceHeartbeatApply(ctx, db.DeviceHeartbeatApplyParams{
		Guids: []string{"g-web-1", "g-never-1"}, SeenAt: []time.Time{now, now.Add(-time.Minute)},
		Metrics: []string{`{}`, `{"logged_in_users":["dave"]}`}, AgentVersions: []string{"1.5.0", ""}, BootIds: []string{"b1", "b2"},
	})
	require.NoError(t, err)
	requireRowsInStep(t, f, "after heartbeats")

	_, err = f.store.DeviceDescriptionSet(ctx, db.DeviceDescriptionSetParams{Description: "Größe ÜBER Édition", Hostname: "web-2", AllSites: true})
	require.NoError(t, err)
	requireRowsInStep(t, f, "after a description edit")
	// Stored lower-cased with the database's lower(), the count folds
	// non-ASCII letters exactly as the rows' fragments do.
	require.Equal(t, []string{"web-2"}, hostnames(t, f, cairn.AllSites, `{"match":"all","conditions":[{"field":"description","op":"contains","value":"über é"}]}`))

	_, err = f.store.DeviceTrustSet(ctx, db.DeviceTrustSetParams{TrustState: "quarantined", Now: now, Guid: "g-web-2", FromState: "active", FromVersion: 1})
	require.NoError(t, err)
	requireRowsInStep(t, f, "after a trust change")

	moved, err := f.store.DeviceSiteAssign(ctx, db.DeviceSiteAssignParams{SiteID: cairn.SiteID(f.sites["beta"]), Guids: []string{"g-web-1", "g-web-2"}})
	require.NoError(t, err)
	require.Len(t, moved, 2)
	requireRowsInStep(t, f, "after a site move")

	n, err := f.store.DeviceDelete(ctx, "g-db-1")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	requireRowsInStep(t, f, "after a delete")

	// The totals agree with the rows, which devices gives: the moved
	// devices count in their new site, the deleted one nowhere.
	page, err := f.svc.Page(ctx, cairn.SiteScope{SiteIDs: []int64{f.sites["beta"]}}, devicefilters.PageQuery{
		Filters: []devicefilters.Node{tree(t, `{"match":"all","conditions":[{"field":"os","op":"contains","value":"ubuntu"}]}`)}})
	require.NoError(t, err)
	require.EqualValues(t, 2, page.Total)
	require.Len(t, page.Rows, 2)
}
