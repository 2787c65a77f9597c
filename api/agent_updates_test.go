package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/workflows"
)

// progress is an agent's progress post with one event per phase.
func progress(op, build, to string, phases ...string) proto.UpdateProgress {
	p := proto.UpdateProgress{OperationID: op, BuildID: build, ToBuildID: to}
	for i, ph := range phases {
		p.Events = append(p.Events, proto.UpdateEvent{Phase: ph, Percent: min(100, i*10), Message: ph + " step",
			CapturedAt: time.Now().UTC()})
	}
	return p
}

func TestAgentUpdateRoutesValidateAndScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	siteA := f.createSite(t, admin, "upa")
	siteB := f.createSite(t, admin, "upb")
	a := f.enrolled(t, admin, siteA, "upd-a1")
	b := f.enrolled(t, admin, siteB, "upd-b1")
	scoped := f.scopedOperatorOf(t, admin, "upd-scoped", siteA)

	for _, c := range []struct {
		name  string
		body  any
		field string
	}{
		{"unknown action", map[string]any{"action": "reboot", "guids": []string{a.guid}}, "action"},
		{"no devices", map[string]any{"action": "update_now", "guids": []string{}}, "guids"},
		{"blank guid", map[string]any{"action": "update_now", "guids": []string{" "}}, "guids"},
		{"repeated guid", map[string]any{"action": "update_now", "guids": []string{a.guid, a.guid}}, "guids"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, "POST", "/api/devices/agent-maintenance", admin, c.body)
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field(c.field), r.Raw)
		})
	}

	t.Run("scope", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/devices/" + b.guid + "/agent-updates"},
			{"GET", "/api/devices/no-such-guid/agent-updates"},
			{"POST", "/api/device/update-agent/upd-b1"},
		} {
			r := f.do(t, c.method, c.path, scoped, nil)
			require.Equal(t, 404, r.Status, "%s %s: %s", c.method, c.path, r.Raw)
		}
		r := f.do(t, "POST", "/api/devices/agent-maintenance", scoped, map[string]any{"action": "update_now", "guids": []string{a.guid, b.guid}})
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, "not_found", r.Body["error"])

		own := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", scoped, nil)
		require.Equal(t, 200, own.Status, own.Raw)
		require.Nil(t, own.Body["active"])
		require.Empty(t, own.Body["history"])
	})

	t.Run("history limit", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=101", "limit=x"} {
			r := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates?"+q, admin, nil)
			require.Equal(t, 400, r.Status, "%s: %s", q, r.Raw)
			require.NotEmpty(t, r.field("limit"), r.Raw)
		}
		r := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates?operation_id=nope", admin, nil)
		require.Equal(t, 404, r.Status, r.Raw)
	})

	t.Run("progress validation", func(t *testing.T) {
		unknown := a.device(t, "POST", proto.PathUpdateProgress, progress("no-such-op", "b1", "", proto.UpdateAccepted))
		require.Equal(t, 404, unknown.Status, unknown.Raw)
		bad := progress("op-x", "b1", "b2", "exploding")
		r := a.device(t, "POST", proto.PathUpdateProgress, bad)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("events[0].phase"), r.Raw)
		none := a.device(t, "POST", proto.PathUpdateProgress, proto.UpdateProgress{OperationID: "op-x", BuildID: "b1"})
		require.Equal(t, 400, none.Status, none.Raw)
		require.NotEmpty(t, none.field("events"), none.Raw)
		// An operator cannot post progress.
		op := f.do(t, "POST", proto.PathUpdateProgress, admin, progress("op-x", "b1", "b2", proto.UpdateAccepted))
		require.Equal(t, 401, op.Status, op.Raw)
	})
}

// An update the agent starts itself (its hourly check found another
// build) is recorded from its first progress post, with agent_maintenance
// job history, and ends with the agent's outcome.
func TestAgentUpdateHourlyProgress(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "uph")
	a := f.enrolled(t, admin, site, "upd-h1")
	other := f.enrolled(t, admin, site, "upd-h2")
	stream := openStream(t, f.url, admin)

	r := a.device(t, "POST", proto.PathUpdateProgress, progress("hourly-1", "build-a", "build-b",
		proto.UpdateAccepted, proto.UpdateDownloading))
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "running", r.Body["status"])

	// Another device cannot post to (or see) this operation.
	stolen := other.device(t, "POST", proto.PathUpdateProgress, progress("hourly-1", "build-a", "", proto.UpdateFailed))
	require.Equal(t, 404, stolen.Status, stolen.Raw)

	// One active update per device.
	second := a.device(t, "POST", proto.PathUpdateProgress, progress("hourly-2", "build-a", "build-c", proto.UpdateAccepted))
	require.Equal(t, 409, second.Status, second.Raw)
	require.Equal(t, "update_in_progress", second.Body["error"])

	h := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", admin, nil)
	require.Equal(t, 200, h.Status, h.Raw)
	active := h.Body["active"].(map[string]any)
	require.Equal(t, "hourly-1", active["operation_id"])
	require.Equal(t, "hourly", active["reason"])
	require.Equal(t, "build-a", active["from_build_id"])
	require.Equal(t, "build-b", active["to_build_id"])
	require.NotEmpty(t, active["run_id"])
	require.NotNil(t, active["scheduled_job_id"])
	require.Len(t, active["events"], 2)

	done := a.device(t, "POST", proto.PathUpdateProgress, progress("hourly-1", "build-b", "build-b",
		proto.UpdateVerifyingCheckin, proto.UpdateCompleted))
	require.Equal(t, 200, done.Status, done.Raw)
	require.Equal(t, "succeeded", done.Body["status"])

	h = f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates?operation_id=hourly-1", admin, nil)
	require.Nil(t, h.Body["active"])
	hist := h.Body["history"].([]any)
	require.Len(t, hist, 1)
	op := hist[0].(map[string]any)
	require.Equal(t, "succeeded", op["status"])
	require.Equal(t, "completed", op["phase"])
	require.NotEmpty(t, op["finished_at"])
	var phases []string
	for _, e := range op["events"].([]any) {
		phases = append(phases, e.(map[string]any)["phase"].(string))
	}
	require.Equal(t, []string{"accepted", "downloading", "verifying_checkin", "completed"}, phases)

	// The job history and the activity row say the same.
	run, err := f.store.Pool.Exec(t.Context(), `SELECT 1 FROM job_runs r JOIN scheduled_jobs j ON j.id = r.scheduled_job_id
		WHERE r.id = $1 AND r.kind = 'agent_maintenance' AND r.trigger = 'hourly' AND r.status = 'succeeded'
		AND j.system AND j.kind = 'agent_maintenance'`, op["run_id"])
	require.NoError(t, err)
	require.EqualValues(t, 1, run.RowsAffected(), "the run is agent_maintenance history under the system job")
	res, err := f.store.Pool.Exec(t.Context(), `SELECT 1 FROM job_run_results WHERE run_id = $1 AND device_guid = $2
		AND status = 'succeeded' AND operation_id = 'hourly-1'`, op["run_id"], a.guid)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.RowsAffected())
	act := f.do(t, "GET", "/api/device/activity/upd-h1", admin, nil)
	found := false
	for _, row := range act.Body["activity"].([]any) {
		m := row.(map[string]any)
		if m["kind"] == "agent_update" {
			found = true
			require.Equal(t, "completed", m["status"], "%v", m)
			require.Contains(t, m["summary"], "build-b")
		}
	}
	require.True(t, found, act.Raw)
	for {
		e := next(t, stream, "agent_update_progress_changed")
		require.Equal(t, a.guid, e.Data["guid"])
		require.Equal(t, "hourly-1", e.Data["operation_id"])
		if e.Data["status"] == "succeeded" {
			require.Equal(t, "completed", e.Data["phase"])
			break
		}
	}

	// A build other than the target reporting completion is a failure.
	r = a.device(t, "POST", proto.PathUpdateProgress, progress("hourly-3", "build-b", "build-c", proto.UpdateAccepted))
	require.Equal(t, 200, r.Status, r.Raw)
	r = a.device(t, "POST", proto.PathUpdateProgress, progress("hourly-3", "build-b", "", proto.UpdateCompleted))
	require.Equal(t, "failed", r.Body["status"], r.Raw)
	h = f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates?operation_id=hourly-3", admin, nil)
	require.Contains(t, h.Body["history"].([]any)[0].(map[string]any)["failure_summary"], "not build-c")

	// An update the agent started and never finished (it died) stops
	// blocking the device once it is stale: the next one ends it.
	r = a.device(t, "POST", proto.PathUpdateProgress, progress("hourly-4", "build-b", "build-c", proto.UpdateAccepted))
	require.Equal(t, 200, r.Status, r.Raw)
	_, err = f.store.Pool.Exec(t.Context(), `UPDATE agent_update_operations SET created_at = now() - interval '1 hour' WHERE id = 'hourly-4'`)
	require.NoError(t, err)
	r = a.device(t, "POST", proto.PathUpdateProgress, progress("hourly-5", "build-b", "build-c", proto.UpdateAccepted))
	require.Equal(t, 200, r.Status, r.Raw)
	h = f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates?operation_id=hourly-4", admin, nil)
	stale := h.Body["history"].([]any)[0].(map[string]any)
	require.Equal(t, "timed_out", stale["status"])
	require.Contains(t, stale["failure_summary"], "no outcome")
}

// The timeline keeps an operation's newest 100 events.
func TestAgentUpdateEventsBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "upe")
	a := f.enrolled(t, admin, site, "upd-e1")
	for i := range 3 {
		p := proto.UpdateProgress{OperationID: "bounded", BuildID: "b1", ToBuildID: "b2"}
		for j := range 50 {
			p.Events = append(p.Events, proto.UpdateEvent{Phase: proto.UpdateDownloading, Percent: 10,
				Message: fmt.Sprintf("chunk %d", i*50+j), CapturedAt: time.Now().UTC()})
		}
		r := a.device(t, "POST", proto.PathUpdateProgress, p)
		require.Equal(t, 200, r.Status, r.Raw)
	}
	h := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", admin, nil)
	evs := h.Body["active"].(map[string]any)["events"].([]any)
	require.Len(t, evs, 100)
	require.Equal(t, "chunk 50", evs[0].(map[string]any)["message"])
	require.Equal(t, "chunk 149", evs[99].(map[string]any)["message"])
	tooMany := proto.UpdateProgress{OperationID: "bounded", BuildID: "b1"}
	for range 101 {
		tooMany.Events = append(tooMany.Events, proto.UpdateEvent{Phase: proto.UpdateDownloading, CapturedAt: time.Now()})
	}
	r := a.device(t, "POST", proto.PathUpdateProgress, tooMany)
	require.Equal(t, 400, r.Status, r.Raw)
}

// An operator's request records a run with one operation per device,
// refuses a second one while it is active, and ends with the agent's
// outcome; quarantined devices and Engines without artifacts refuse.
func TestAgentUpdateRequests(t *testing.T) {
	t.Parallel()
	f, _ := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "upr")
	a := f.enrolled(t, admin, site, "upd-r1")
	q := f.enrolled(t, admin, site, "upd-r2")

	r := f.do(t, "POST", "/api/devices/agent-maintenance", admin, map[string]any{"action": "update_now", "guids": []string{a.guid}})
	require.Equal(t, 202, r.Status, r.Raw)
	runID := r.Body["run_id"].(string)
	ops := r.Body["operations"].([]any)
	require.Len(t, ops, 1)
	opID := ops[0].(map[string]any)["operation_id"].(string)
	require.Equal(t, a.guid, ops[0].(map[string]any)["guid"])

	dup := f.do(t, "POST", "/api/device/update-agent/upd-r1", admin, nil)
	require.Equal(t, 409, dup.Status, dup.Raw)
	require.Equal(t, "update_in_progress", dup.Body["error"])

	h := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", admin, nil)
	active := h.Body["active"].(map[string]any)
	require.Equal(t, opID, active["operation_id"])
	require.Equal(t, runID, active["run_id"])
	require.Equal(t, "operator", active["reason"])
	require.Equal(t, "test-build-linux-amd64", active["to_build_id"])
	require.Contains(t, active["artifact_id"], "linux-amd64-")

	done := a.device(t, "POST", proto.PathUpdateProgress, progress(opID, "test-build-linux-amd64", "",
		proto.UpdateAccepted, proto.UpdateRestarting, proto.UpdateCompleted))
	require.Equal(t, 200, done.Status, done.Raw)
	require.Equal(t, "succeeded", done.Body["status"])
	h = f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates?operation_id="+opID, admin, nil)
	require.Nil(t, h.Body["active"])
	require.Equal(t, "succeeded", h.Body["history"].([]any)[0].(map[string]any)["status"])
	var status string
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT status FROM job_runs WHERE id = $1 AND kind = 'agent_maintenance'`, runID).Scan(&status))
	require.Equal(t, "succeeded", status)

	// Trust refuses before anything is recorded.
	require.Equal(t, 200, f.do(t, "POST", "/api/devices/"+q.guid+"/quarantine", admin, nil).Status)
	qr := f.do(t, "POST", "/api/devices/agent-maintenance", admin, map[string]any{"action": "update_now", "guids": []string{a.guid, q.guid}})
	require.Equal(t, 409, qr.Status, qr.Raw)
	require.Equal(t, "device_quarantined", qr.Body["error"])
	h = f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates", admin, nil)
	require.Nil(t, h.Body["active"], "all or nothing: the other device got no update")

	// A scheduled agent_maintenance job records its runs under itself.
	var jobID int64
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `INSERT INTO scheduled_jobs (name, kind) VALUES ('Nightly agents', 'agent_maintenance')
		RETURNING id`).Scan(&jobID))
	req, err := f.engine.core.Updates.RequestFor(t.Context(), cairn.SiteScope{All: true}, "scheduler", []string{a.guid},
		agentupdates.Job{ScheduledJobID: jobID, Trigger: "schedule"})
	require.NoError(t, err)
	require.Equal(t, jobID, req.ScheduledJobID)
	var trigger string
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT trigger FROM job_runs WHERE id = $1 AND scheduled_job_id = $2`,
		req.RunID, jobID).Scan(&trigger))
	require.Equal(t, "schedule", trigger)

	// An Engine with no agent builds has nothing to install.
	bare := setup(t)
	badmin := bare.admin(t)
	b := bare.enrolled(t, badmin, bare.createSite(t, badmin, "upn"), "upd-n1")
	none := bare.do(t, "POST", "/api/device/update-agent/upd-n1", badmin, nil)
	require.Equal(t, "artifact_unavailable", none.Body["error"], none.Raw)
	require.Empty(t, bare.do(t, "GET", "/api/devices/"+b.guid+"/agent-updates", badmin, nil).Body["history"])
}

// An operator's update request takes a slot of its site's scheduled lane
// (SPEC "Limits": agent-maintenance items use a slot while active): with
// the lane full the operation stays queued, asking for a slot, and it
// starts once one frees; the request's slot is freed when its run ends.
func TestOperatorUpdateWaitsForALaneSlot(t *testing.T) {
	t.Parallel()
	f, _ := setupWithArtifacts(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "updlane")
	a := f.enrolled(t, admin, site, "upd-lane")

	ctx := t.Context()
	lane := f.engine.core.Slots
	activeItems := func() float64 { return f.laneActiveItems(t, admin, site) }
	capacity := f.fillLane(t, site)

	r := f.do(t, "POST", "/api/devices/agent-maintenance", admin, map[string]any{"action": "update_now", "guids": []string{a.guid}})
	require.Equal(t, 202, r.Status, r.Raw)
	opID := r.Body["operations"].([]any)[0].(map[string]any)["operation_id"].(string)
	opStatus := func() string {
		h := f.do(t, "GET", "/api/devices/"+a.guid+"/agent-updates?operation_id="+opID, admin, nil)
		require.Equal(t, 200, h.Status, h.Raw)
		if act, ok := h.Body["active"].(map[string]any); ok {
			return act["status"].(string)
		}
		return h.Body["history"].([]any)[0].(map[string]any)["status"].(string)
	}

	// The update's workflow has asked for a slot more than once: the lane
	// is full, so it waits, queued, and holds nothing.
	wfID := workflows.AgentUpdateWorkflowID(cairn.DeviceGUID(a.guid), cairn.OperationID(opID))
	require.Eventually(t, func() bool {
		d, err := temporalClient.DescribeWorkflowExecution(ctx, wfID, "")
		require.NoError(t, err)
		for _, p := range d.PendingActivities {
			if p.ActivityType.GetName() == "AcquireSlot" && p.Attempt >= 2 {
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "the update never asked for a lane slot")
	require.Equal(t, "queued", opStatus())
	require.Equal(t, float64(capacity), activeItems())

	// A freed slot lets it start; once its run has ended the request's
	// slot is free again.
	require.NoError(t, lane.Release(ctx, "bulk-0"))
	require.Eventually(t, func() bool { return opStatus() != "queued" }, 2*time.Minute, 100*time.Millisecond)
	done := a.device(t, "POST", proto.PathUpdateProgress, progress(opID, "test-build-linux-amd64", "",
		proto.UpdateAccepted, proto.UpdateRestarting, proto.UpdateCompleted))
	require.Equal(t, 200, done.Status, done.Raw)
	require.Eventually(t, func() bool { return activeItems() == float64(capacity-1) }, 5*time.Minute, 100*time.Millisecond)
}
