package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/workflows"
)

// jobRuns lists a job's runs.
func (f *fixture) jobRuns(t *testing.T, token string, id int64) []map[string]any {
	t.Helper()
	r := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs", id), token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	var out []map[string]any
	for _, x := range r.Body["runs"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// A cron job fires on a real agent within its minute, records its run
// keyed by the fire time, and links the device's activity row to the job.
func TestCronJobFiresOnAgent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "cron")
	a := f.scriptAgent(t, admin, site, "cron-01")
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "stamp", "kind": "script", "language": "sh",
		"body": "echo fired-$CAIRN_PARAM_WHO", "parameters": []any{map[string]any{"name": "WHO", "type": "string", "default": "x"}}})
	require.Equal(t, 201, r.Status, r.Raw)
	asm := int64(r.Body["id"].(float64))

	r = f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "every minute", "kind": "script", "assembly_id": asm,
		"parameters": map[string]any{"WHO": "cron"}, "targets": map[string]any{"devices": []string{a.guid}},
		"schedule": map[string]any{"type": "cron", "expression": "* * * * *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	created := time.Now()

	var run map[string]any
	require.Eventually(t, func() bool {
		for _, x := range f.jobRuns(t, admin, id) {
			if x["status"] == "succeeded" {
				run = x
				return true
			}
		}
		return false
	}, 3*time.Minute, 250*time.Millisecond, "no run succeeded")
	// Stop further fires so the checks below see a still history.
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/toggle", id), admin, map[string]any{"enabled": false})
	require.Equal(t, 200, r.Status, r.Raw)

	require.Equal(t, "schedule", run["trigger"])
	require.Equal(t, "scheduled_job", run["kind"])
	require.Equal(t, float64(id), run["scheduled_job_id"])
	at, err := time.Parse(time.RFC3339, run["scheduled_for"].(string))
	require.NoError(t, err)
	require.Zero(t, at.Second(), "the fire time is the cron minute, not when the workflow started")
	require.False(t, at.Before(created.Truncate(time.Minute)))
	require.Equal(t, map[string]any{"pending": 0.0, "running": 0.0, "succeeded": 1.0, "failed": 0.0, "timed_out": 0.0, "skipped": 0.0}, run["counts"])

	detail := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", id, run["run_id"]), admin, nil)
	require.Equal(t, 200, detail.Status, detail.Raw)
	res := onlyResult(t, detail)
	require.Equal(t, "fired-cron\n", res["stdout"])
	require.Equal(t, 0.0, res["exit_code"])

	got := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d", id), admin, nil)
	require.Equal(t, run["run_id"], got.Body["last_run"].(map[string]any)["run_id"])

	dev := f.do(t, "GET", "/api/devices/"+a.guid+"/job_runs", admin, nil)
	require.Equal(t, 200, dev.Status, dev.Raw)
	first := dev.Body["results"].([]any)[0].(map[string]any)
	require.Equal(t, "every minute", first["scheduled_job_name"])
	require.Equal(t, float64(id), first["scheduled_job_id"])

	linked := func() int {
		n := 0
		act := f.do(t, "GET", "/api/device/activity/cron-01", admin, nil)
		for _, e := range act.Body["activity"].([]any) {
			meta := e.(map[string]any)["metadata"].(map[string]any)
			if meta["scheduled_job_id"] == float64(id) {
				require.Equal(t, "every minute", meta["scheduled_job_name"])
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return linked() > 0 }, 30*time.Second, 100*time.Millisecond)

	// Deleting the job takes its runs and activity rows with it.
	r = f.do(t, "DELETE", fmt.Sprintf("/api/scheduled_jobs/%d", id), admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	require.Zero(t, linked())
	r = f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", id, run["run_id"]), admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)
}

// The same fire executed twice at once (a restarted scheduler, a retried
// start, an SRE re-driving it) makes one run and runs the script once.
func TestDuplicateFireRunsOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "dup")
	f.scriptAgent(t, admin, site, "dup-01")
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "once", "kind": "script", "language": "sh", "body": "echo once"})
	require.Equal(t, 201, r.Status, r.Raw)
	asm := int64(r.Body["id"].(float64))
	// A yearly job: nothing fires by itself during the test.
	r = f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "yearly", "kind": "script", "assembly_id": asm,
		"targets": map[string]any{"sites": []int64{site}}, "schedule": map[string]any{"type": "cron", "expression": "0 0 1 1 *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	ctx := context.Background()

	fire := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var fires []client.WorkflowRun
	for i := range 2 {
		run, err := f.engine.core.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID: fmt.Sprintf("%s-dup-%d", f.jobScheduler().ScheduleID(id), i), TaskQueue: f.engineQueue},
			workflows.ScheduledJobFire, workflows.ScheduledJobFireInput{JobID: id, ScheduledFor: &fire})
		require.NoError(t, err)
		fires = append(fires, run)
	}
	var got []workflows.ScheduledJobFireResult
	for _, run := range fires {
		var res workflows.ScheduledJobFireResult
		require.NoError(t, run.Get(ctx, &res))
		got = append(got, res)
	}
	require.Equal(t, got[0].RunID, got[1].RunID, "both fires name the same run")

	runs := f.jobRuns(t, admin, id)
	require.Len(t, runs, 1, "one run per fire time")
	require.Equal(t, string(got[0].RunID), runs[0]["run_id"])
	require.Equal(t, "succeeded", runs[0]["status"])
	require.Equal(t, fire.Format(time.RFC3339), runs[0]["scheduled_for"])
	executed := 0
	act := f.do(t, "GET", "/api/device/activity/dup-01", admin, nil)
	for _, e := range act.Body["activity"].([]any) {
		if e.(map[string]any)["kind"] == "script_run" {
			executed++
		}
	}
	require.Equal(t, 1, executed, "the script ran once")
}

// A rerun answers with the run ID it then creates; a flow runs its steps
// as job runs on a real agent, following each step's condition.
func TestRerunAndFlowOnAgent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "flow")
	a := f.scriptAgent(t, admin, site, "flow-01")
	asm := func(name, body string) int64 {
		r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": name, "kind": "script", "language": "sh", "body": body})
		require.Equal(t, 201, r.Status, r.Raw)
		return int64(r.Body["id"].(float64))
	}
	check, clean, report := asm("check", "echo checking; exit 3"), asm("clean", "echo cleaned"), asm("report", "echo report")

	r := f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "on demand", "kind": "script", "assembly_id": clean,
		"targets": map[string]any{"devices": []string{a.guid}}, "schedule": map[string]any{"type": "manual"}})
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", job), admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	runID := r.Body["run_id"].(string)
	require.Eventually(t, func() bool {
		d := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", job, runID), admin, nil)
		return d.Status == 200 && d.Body["status"] == "succeeded"
	}, 90*time.Second, 250*time.Millisecond)
	runs := f.jobRuns(t, admin, job)
	require.Len(t, runs, 1)
	require.Equal(t, "rerun", runs[0]["trigger"])
	require.Equal(t, "admin", runs[0]["requested_by"])
	require.Nil(t, runs[0]["scheduled_for"])

	r = f.do(t, "POST", "/api/workflows", admin, map[string]any{"name": "care", "steps": []any{
		map[string]any{"id": "check", "assembly_id": check},
		map[string]any{"id": "clean", "assembly_id": clean, "condition": "on_failure"},
		map[string]any{"id": "report", "assembly_id": report, "condition": "on_failure"},
	}})
	require.Equal(t, 201, r.Status, r.Raw)
	flow := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", fmt.Sprintf("/api/workflows/%d/start", flow), admin, map[string]any{"device_guids": []string{a.guid}})
	require.Equal(t, 202, r.Status, r.Raw)
	flowRun := r.Body["run_id"].(string)
	var done response
	require.Eventually(t, func() bool {
		done = f.do(t, "GET", "/api/workflows/runs/"+flowRun, admin, nil)
		return done.Status == 200 && (done.Body["status"] == "succeeded" || done.Body["status"] == "failed")
	}, 2*time.Minute, 250*time.Millisecond)
	require.Equal(t, "failed", done.Body["status"], "a step that ran failed")
	steps := done.Body["steps"].([]any)
	status := func(i int) string { return steps[i].(map[string]any)["status"].(string) }
	require.Equal(t, []string{"failed", "succeeded", "skipped"}, []string{status(0), status(1), status(2)},
		"clean ran after the failed check; report looked at clean, which succeeded")
	cleanRun := steps[1].(map[string]any)["run_id"].(string)
	q := f.do(t, "GET", "/api/scripts/quick_run/"+cleanRun, admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	require.Equal(t, "cleaned\n", onlyResult(t, q)["stdout"])
	require.Equal(t, "workflow", q.Body["kind"])
	list := f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/runs", flow), admin, nil)
	require.Len(t, list.Body["runs"], 1)
}

// A script job's content is signed when it is saved, and each fire signs
// payloads bound to its devices and run from it (issue 21 item 4). A fire
// that comes while the master cipher is locked (after a restart, before
// anyone unlocks, with no CAIRN_AEGIS_PASSPHRASE_FILE) waits: its payloads
// are sealed under the cipher (item 1) and a locked process runs no
// worker; after the unlock it runs the assembly version the job was saved
// with.
func TestJobFireWaitsForTheUnlock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "locked")
	agent := f.scriptAgent(t, admin, site, "locked-01")
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "v", "kind": "script", "language": "sh", "body": "echo one"})
	require.Equal(t, 201, r.Status, r.Raw)
	asm := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "yearly", "kind": "script", "assembly_id": asm,
		"targets": map[string]any{"sites": []int64{site}}, "schedule": map[string]any{"type": "cron", "expression": "0 0 1 1 *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, 1.0, r.Body["assembly_version"])
	id := int64(r.Body["id"].(float64))
	// A later edit of the assembly does not change what the job runs.
	r = f.do(t, "PUT", fmt.Sprintf("/api/assemblies/%d", asm), admin, map[string]any{"name": "v", "kind": "script", "language": "sh", "body": "echo two"})
	require.Equal(t, 200, r.Status, r.Raw)

	f.engine.cipher.Lock()
	ctx := context.Background()
	fire := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sched := temporalClient.ScheduleClient().GetHandle(ctx, f.jobScheduler().ScheduleID(id))
	require.NoError(t, sched.Backfill(ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{
		Start: fire.Add(-time.Minute), End: fire.Add(time.Minute), Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}}}))
	// The fire started and waits: this process, locked, polls no queue.
	fireID := f.jobScheduler().ScheduleID(id) + "-" + fire.Format(time.RFC3339)
	require.Eventually(t, func() bool {
		wf, err := temporalClient.DescribeWorkflowExecution(ctx, fireID, "")
		return err == nil && wf.GetPendingWorkflowTask().GetState() == enumspb.PENDING_WORKFLOW_TASK_STATE_SCHEDULED
	}, 2*time.Minute, 100*time.Millisecond)
	require.Empty(t, f.engine.mgr.Statuses(), "a locked process runs no worker")
	jobs := f.engine.core.Jobs
	runs, err := jobs.Runs(ctx, cairn.AllSites, id, 10)
	require.NoError(t, err)
	require.Empty(t, runs, "a fire ran while the cipher was locked")
	r = f.do(t, "GET", "/api/scheduled_jobs", admin, nil)
	require.Equal(t, 423, r.Status, "the cipher really is locked")

	// As after a restart: the unlock starts the workers, and the agent,
	// whose socket the locked process closed, connects again.
	require.NoError(t, f.engine.cipher.Unlock(ctx, passphrase))
	agent.serve(t)
	require.Eventually(t, func() bool {
		runs, err := jobs.Runs(ctx, cairn.AllSites, id, 10)
		require.NoError(t, err)
		return len(runs) == 1 && runs[0].Status == "succeeded"
	}, 3*time.Minute, 250*time.Millisecond)
	runs, err = jobs.Runs(ctx, cairn.AllSites, id, 10)
	require.NoError(t, err)
	run, err := f.engine.core.Automation.GetRun(ctx, cairn.AllSites, string(runs[0].RunID), true)
	require.NoError(t, err)
	require.Equal(t, "echo one", "echo "+strings.TrimSpace(run.Results[0].Stdout), "the content signed when the job was saved")
	require.Equal(t, int32(1), *run.AssemblyVersion)
}

// A scheduled job of kind workflow fires a flow run on its targets.
func TestWorkflowJobFires(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "wfjob")
	a := f.scriptAgent(t, admin, site, "wfjob-01")
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "ok", "kind": "script", "language": "sh", "body": "echo ok"})
	require.Equal(t, 201, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/workflows", admin, map[string]any{"name": "one step", "steps": []any{map[string]any{"assembly_id": r.Body["id"]}}})
	require.Equal(t, 201, r.Status, r.Raw)
	flow := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "yearly flow", "kind": "workflow", "workflow_id": flow,
		"targets": map[string]any{"devices": []string{a.guid}}, "schedule": map[string]any{"type": "cron", "expression": "0 0 1 1 *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	ctx := context.Background()
	h := temporalClient.ScheduleClient().GetHandle(ctx, f.jobScheduler().ScheduleID(id))
	fire := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, h.Backfill(ctx, client.ScheduleBackfillOptions{Backfill: []client.ScheduleBackfill{{
		Start: fire.Add(-time.Minute), End: fire.Add(time.Minute), Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}}}))
	require.Eventually(t, func() bool {
		runs := f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/runs", flow), admin, nil).Body["runs"].([]any)
		return len(runs) == 1 && runs[0].(map[string]any)["status"] == "succeeded"
	}, 2*time.Minute, 250*time.Millisecond)
	runs := f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/runs", flow), admin, nil).Body["runs"].([]any)
	require.Len(t, runs, 1)
	run := runs[0].(map[string]any)
	require.Equal(t, float64(id), run["scheduled_job_id"])
	require.Equal(t, []any{a.guid}, run["device_guids"])
}

// A site whose scheduled lane is full holds a job's fire until a slot
// frees (SPEC "Limits": scheduled jobs take a slot while active), while a
// quick run on the same device goes straight through: interactive work is
// never starved by bulk work.
func TestFullLaneHoldsJobsNotQuickRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "lane")
	a := f.scriptAgent(t, admin, site, "lane-01")
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "bulk", "kind": "script", "language": "sh", "body": "echo bulk"})
	require.Equal(t, 201, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "held", "kind": "script", "assembly_id": r.Body["id"],
		"targets": map[string]any{"devices": []string{a.guid}}, "schedule": map[string]any{"type": "cron", "expression": "0 0 1 1 *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))

	ctx := context.Background()
	lane := f.engine.core.Slots
	activeItems := func() float64 { return f.laneActiveItems(t, admin, site) }
	capacity := f.fillLane(t, site)
	require.Equal(t, float64(capacity), activeItems())

	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", job), admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	runID := r.Body["run_id"].(string)
	jobRun := func() response {
		d := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", job, runID), admin, nil)
		require.Contains(t, []int{200, 404}, d.Status, d.Raw)
		return d
	}
	// The fire has made its run and waits for a slot.
	require.Eventually(t, func() bool { return jobRun().Status == 200 }, time.Minute, 100*time.Millisecond)

	quick := f.finishedRun(t, admin, f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "language": "sh", "body": "echo interactive"}))
	require.Equal(t, "succeeded", quick.Body["status"], quick.Raw)
	require.Equal(t, "interactive\n", onlyResult(t, quick)["stdout"])
	held := jobRun()
	require.Equal(t, "pending", held.Body["status"], "the job must wait for a slot: %s", held.Raw)
	require.Equal(t, "pending", onlyResult(t, held)["status"])
	require.Equal(t, float64(capacity), activeItems(), "the waiting fire holds no slot")

	// A freed slot lets the fire run; it releases its slot when done.
	require.NoError(t, lane.Release(ctx, "bulk-0"))
	require.Eventually(t, func() bool { return jobRun().Body["status"] == "succeeded" }, 2*time.Minute, 200*time.Millisecond)
	require.Equal(t, "bulk\n", onlyResult(t, jobRun())["stdout"])
	require.Eventually(t, func() bool { return activeItems() == float64(capacity-1) }, time.Minute, 100*time.Millisecond)
}

// laneActiveItems is the site's active lane items as the site-worker
// settings route reports them.
func (f *fixture) laneActiveItems(t *testing.T, admin string, site int64) float64 {
	t.Helper()
	s := f.do(t, "GET", "/api/server/site-worker-settings", admin, nil)
	require.Equal(t, 200, s.Status, s.Raw)
	for _, x := range s.Body["sites"].([]any) {
		if m := x.(map[string]any); m["site_id"] == float64(site) {
			return m["active_items"].(float64)
		}
	}
	t.Fatalf("site %d missing from the site-worker settings", site)
	return 0
}

// fillLane takes every slot of the site's lane under holders bulk-0,
// bulk-1, ... and returns how many it took (the lane's capacity).
func (f *fixture) fillLane(t *testing.T, site int64) int {
	t.Helper()
	capacity := 0
	for {
		ok, err := f.engine.core.Slots.Acquire(t.Context(), site, fmt.Sprint("bulk-", capacity), "scheduled_job", time.Hour)
		require.NoError(t, err)
		if !ok {
			break
		}
		capacity++
	}
	require.Positive(t, capacity)
	return capacity
}
