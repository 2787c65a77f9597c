package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/workflows"
)

// An agent_maintenance job's fire requests one update per target device
// under the job (visible in the device's update history), reports a
// device already updating instead of failing it, and, fired twice for one
// fire time, requests nothing twice.
func TestAgentMaintenanceJobFires(t *testing.T) {
	t.Parallel()
	f, _ := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "maint")
	a := f.enrolled(t, admin, site, "maint-a")
	b := f.enrolled(t, admin, site, "maint-b")
	busy := f.do(t, "POST", "/api/device/update-agent/maint-b", admin, nil)
	require.Equal(t, 202, busy.Status, busy.Raw)

	r := f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "agents", "kind": "agent_maintenance",
		"targets": map[string]any{"sites": []int64{site}}, "schedule": map[string]any{"type": "cron", "expression": "0 0 1 1 *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	ctx := context.Background()

	fire := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var fires []client.WorkflowRun
	for i := range 2 {
		run, err := f.engine.core.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("%s-maint-%d", f.jobScheduler().ScheduleID(id), i), TaskQueue: f.engineQueue},
			workflows.ScheduledJobFire, workflows.ScheduledJobFireInput{JobID: id, ScheduledFor: &fire})
		require.NoError(t, err)
		fires = append(fires, run)
	}

	// The fire's update of a shows under the job.
	var opID string
	require.Eventually(t, func() bool {
		h := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", admin, nil)
		act, ok := h.Body["active"].(map[string]any)
		// running: the workflow opened the activity row and is sending
		// the request, as it has before a real agent can answer.
		if !ok || act["scheduled_job_id"] != float64(id) || act["status"] != "running" {
			return false
		}
		opID = act["operation_id"].(string)
		return true
	}, 2*time.Minute, 100*time.Millisecond)
	done := a.device(t, "POST", proto.PathUpdateProgress, progress(opID, "test-build-linux-amd64", "",
		proto.UpdateAccepted, proto.UpdateRestarting, proto.UpdateCompleted))
	require.Equal(t, 200, done.Status, done.Raw)

	var got []workflows.ScheduledJobFireResult
	for _, run := range fires {
		var res workflows.ScheduledJobFireResult
		require.NoError(t, run.Get(ctx, &res))
		got = append(got, res)
	}
	require.NotEmpty(t, got[0].RunID)
	require.Equal(t, got[0].RunID, got[1].RunID, "both fires name the same run")
	runs := f.jobRuns(t, admin, id)
	require.Len(t, runs, 1, "one run per fire time")
	require.Equal(t, "succeeded", runs[0]["status"], "a device already updating is reported, not failed")
	require.Equal(t, fire.Format(time.RFC3339), runs[0]["scheduled_for"])

	run := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", id, got[0].RunID), admin, nil)
	require.Equal(t, 200, run.Status, run.Raw)
	results := map[string]map[string]any{}
	for _, x := range run.Body["results"].([]any) {
		res := x.(map[string]any)
		results[res["guid"].(string)] = res
	}
	require.Len(t, results, 2)
	require.Equal(t, "succeeded", results[a.guid]["status"])
	require.Equal(t, "skipped", results[b.guid]["status"])
	require.Equal(t, "update_in_progress", results[b.guid]["error_code"])

	h := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", admin, nil)
	hist := h.Body["history"].([]any)
	require.Len(t, hist, 1, "one update requested for the fire")
	require.Equal(t, float64(id), hist[0].(map[string]any)["scheduled_job_id"])
	require.Equal(t, string(got[0].RunID), hist[0].(map[string]any)["run_id"])
	var n int
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM agent_update_operations WHERE run_id = $1`,
		got[0].RunID).Scan(&n))
	require.Equal(t, 1, n, "nothing requested twice")
	// The update's workflow opens its activity row; the run's result can
	// be recorded before that workflow task has run.
	require.Eventually(t, func() bool {
		act := f.do(t, "GET", "/api/device/activity/maint-a", admin, nil)
		for _, row := range act.Body["activity"].([]any) {
			m := row.(map[string]any)
			if meta, ok := m["metadata"].(map[string]any); ok && m["kind"] == "agent_update" {
				return meta["scheduled_job_id"] == float64(id)
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond, "the update's activity row names the job")
}

// On an Engine with no agent builds an agent_maintenance fire reports
// each device failed with artifact_unavailable instead of failing the fire.
func TestAgentMaintenanceJobWithoutArtifacts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "maintn")
	a := f.enrolled(t, admin, site, "maintn-a")
	r := f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "agents", "kind": "agent_maintenance",
		"targets": map[string]any{"devices": []string{a.guid}}, "schedule": map[string]any{"type": "manual"}})
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	rr := f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", id), admin, nil)
	require.Equal(t, 202, rr.Status, rr.Raw)
	runID := rr.Body["run_id"].(string)

	var run map[string]any
	require.Eventually(t, func() bool {
		g := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", id, runID), admin, nil)
		run = g.Body
		return g.Status == 200 && run["status"] == "failed"
	}, 2*time.Minute, 100*time.Millisecond)
	results := run["results"].([]any)
	require.Len(t, results, 1)
	res := results[0].(map[string]any)
	require.Equal(t, a.guid, res["guid"])
	require.Equal(t, "failed", res["status"])
	require.Equal(t, "artifact_unavailable", res["error_code"])
	require.Empty(t, f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", admin, nil).Body["history"])
}
