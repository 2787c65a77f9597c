package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// A site's assigned work on GET /api/server/workers: agent requests
// written to a socket (running) or not yet (queued), expired ones not at
// all; job runs with a device of the site running (running) or only
// pending (queued); another site's work is its own.
func TestServerWorkersAssignedWork(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	ctx := context.Background()
	q := f.store.Queries
	busy := cairn.SiteID(f.createSite(t, admin, "busy"))
	other := cairn.SiteID(f.createSite(t, admin, "other"))
	dev := func(guid string, site cairn.SiteID) {
		_, err := q.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: guid, SiteID: site})
		require.NoError(t, err)
	}
	dev("busy-a", busy)
	dev("busy-b", busy)
	dev("other-a", other)

	request := func(id, guid string, expires time.Duration, delivered bool) {
		require.NoError(t, q.AgentRequestInsert(ctx, db.AgentRequestInsertParams{ID: id, DeviceGuid: cairn.DeviceGUID(guid), OperationID: cairn.OperationID(id),
			Type: "service_control", Payload: []byte(`{}`), TaskToken: []byte("t"), ExpiresAt: time.Now().Add(expires)}))
		if delivered {
			_, err := q.AgentRequestMarkDelivered(ctx, db.AgentRequestMarkDeliveredParams{ID: id, DeviceGuid: guid, Replica: "r1"})
			require.NoError(t, err)
		}
	}
	request("req-1", "busy-a", time.Hour, true)
	request("req-2", "busy-b", time.Hour, false)
	request("req-3", "busy-b", time.Hour, false)
	request("req-4", "busy-a", -time.Minute, false) // expired
	request("req-5", "other-a", time.Hour, true)

	run := func(id string, results map[string]string) {
		_, err := q.JobRunInsert(ctx, db.JobRunInsertParams{ID: cairn.RunID(id), Kind: "quick_run", Trigger: "manual", Parameters: []byte(`{}`)})
		require.NoError(t, err)
		p := db.JobRunResultsInsertParams{RunID: cairn.RunID(id)}
		for guid := range results {
			site := busy
			if guid == "other-a" {
				site = other
			}
			p.Guids, p.Hostnames, p.SiteIds = append(p.Guids, guid), append(p.Hostnames, guid), append(p.SiteIds, int64(site))
			p.Statuses, p.ErrorCodes, p.ErrorMessages, p.Signed = append(p.Statuses, "pending"), append(p.ErrorCodes, ""), append(p.ErrorMessages, ""), append(p.Signed, "")
		}
		require.NoError(t, q.JobRunResultsInsert(ctx, p))
		require.NoError(t, q.JobRunStart(ctx, cairn.RunID(id)))
		for guid, status := range results {
			if status == "running" {
				_, err := q.JobRunResultDispatch(ctx, db.JobRunResultDispatchParams{RunID: cairn.RunID(id), DeviceGuid: cairn.DeviceGUID(guid), OperationID: cairn.OperationID(id + guid)})
				require.NoError(t, err)
			}
		}
	}
	run("run-running", map[string]string{"busy-a": "running", "busy-b": "pending"})
	run("run-queued", map[string]string{"busy-a": "pending", "other-a": "running"})

	r := f.do(t, "GET", "/api/server/workers", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	work := map[cairn.SiteID]any{}
	for _, s := range r.Body["sites"].([]any) {
		m := s.(map[string]any)
		work[cairn.SiteID(m["site_id"].(float64))] = m["assigned_work"]
		if cairn.SiteID(m["site_id"].(float64)) == busy {
			require.EqualValues(t, 2, m["total_devices"])
			require.EqualValues(t, 0, m["online_devices"], "never heard from")
			require.EqualValues(t, 0, m["connected_agents"])
		}
	}
	require.Equal(t, map[string]any{"operations_running": 1.0, "operations_queued": 2.0, "jobs_running": 1.0, "jobs_queued": 1.0}, work[busy])
	require.Equal(t, map[string]any{"operations_running": 1.0, "operations_queued": 0.0, "jobs_running": 1.0, "jobs_queued": 0.0}, work[other])
}
