package api_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/cairn-rmm/cairn"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// jobScheduler addresses the fixture's job schedules in Temporal.
func (f *fixture) jobScheduler() workflowclient.JobScheduler {
	return workflowclient.JobScheduler{Client: f.engine.core.Temporal, Data: f.engine.core.Data, TaskQueue: f.engineQueue,
		Prefix: "scheduled-job:" + f.engineQueue + ":"}
}

// describeJobSchedule describes the job's Temporal Schedule (nil: none).
func (f *fixture) describeJobSchedule(t *testing.T, id int64) *client.ScheduleDescription {
	t.Helper()
	d, err := temporalClient.ScheduleClient().GetHandle(context.Background(), f.jobScheduler().ScheduleID(id)).Describe(context.Background())
	var notFound *serviceerror.NotFound
	if err != nil && errors.As(err, &notFound) {
		return nil
	}
	require.NoError(t, err)
	return d
}

// testAssembly creates an assembly (a script prints hi) and returns its ID.
func (f *fixture) testAssembly(t *testing.T, admin, name, kind string) int64 {
	t.Helper()
	body := map[string]any{"name": name, "kind": kind, "body": "echo hi"}
	if kind == "ansible_playbook" {
		body["body"] = "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - ansible.builtin.debug: {msg: hi}\n"
	}
	if kind == "script" {
		body["language"] = "sh"
		body["parameters"] = []any{map[string]any{"name": "days", "type": "number", "default": 1}}
	}
	r := f.do(t, "POST", "/api/assemblies", admin, body)
	require.Equal(t, 201, r.Status, r.Raw)
	return int64(r.Body["id"].(float64))
}

func jobBody(assembly int64, schedule map[string]any, targets map[string]any) map[string]any {
	return map[string]any{"name": "Nightly cleanup", "kind": "script", "assembly_id": assembly, "parameters": map[string]any{"days": 7},
		"targets": targets, "schedule": schedule, "options": map[string]any{"timeout_seconds": 120, "run_when_online": true}}
}

func TestScheduledJobCRUDMirrorsTemporal(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	asm := f.testAssembly(t, fl.admin, "cleanup", "script")

	r := f.do(t, "POST", "/api/scheduled_jobs", fl.admin, jobBody(asm,
		map[string]any{"type": "cron", "expression": "*/5 * * * *", "timezone": "Europe/Berlin"},
		map[string]any{"devices": []string{"guid-conn"}, "sites": []int64{fl.siteB}}))
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	require.Equal(t, "Nightly cleanup", r.Body["name"])
	require.Equal(t, "cleanup", r.Body["assembly_name"])
	require.Equal(t, true, r.Body["enabled"])
	require.Equal(t, "admin", r.Body["created_by"])
	require.Nil(t, r.Body["last_run"])
	require.Equal(t, map[string]any{"type": "cron", "expression": "*/5 * * * *", "timezone": "Europe/Berlin"}, r.Body["schedule"])
	require.Equal(t, map[string]any{"devices": []any{"guid-conn"}, "sites": []any{float64(fl.siteB)}, "filters": []any{}}, r.Body["targets"])
	require.Equal(t, map[string]any{"run_when_online": true, "timeout_seconds": float64(120), "stop_on_first_failure": false}, r.Body["options"])
	next, err := time.Parse(time.RFC3339, r.Body["next_run_at"].(string))
	require.NoError(t, err)
	require.Zero(t, next.Minute()%5)

	d := f.describeJobSchedule(t, id)
	require.NotNil(t, d)
	// Temporal keeps a cron expression as the calendar it compiles to.
	require.Len(t, d.Schedule.Spec.Calendars, 1)
	require.Equal(t, []client.ScheduleRange{{Start: 0, End: 59, Step: 5}}, d.Schedule.Spec.Calendars[0].Minute)
	require.Equal(t, "Europe/Berlin", d.Schedule.Spec.TimeZoneName)
	require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, d.Schedule.Policy.Overlap)
	require.Equal(t, workflows.JobCatchupWindow, d.Schedule.Policy.CatchupWindow)
	require.False(t, d.Schedule.State.Paused)
	act := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.Equal(t, "ScheduledJobFire", act.Workflow)
	require.Equal(t, f.engineQueue, act.TaskQueue)

	got := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, nil)
	require.Equal(t, 200, got.Status, got.Raw)
	require.Equal(t, r.Body["targets"], got.Body["targets"])
	list := f.do(t, "GET", "/api/scheduled_jobs", fl.admin, nil)
	require.Len(t, list.Body["jobs"], 1)

	// Update to an interval: the schedule follows.
	body := jobBody(asm, map[string]any{"type": "interval", "every_seconds": 3600}, map[string]any{"sites": []int64{fl.siteA}})
	body["name"] = "Hourly cleanup"
	r = f.do(t, "PUT", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, body)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Hourly cleanup", r.Body["name"])
	d = f.describeJobSchedule(t, id)
	require.Empty(t, d.Schedule.Spec.Calendars)
	require.Equal(t, []client.ScheduleIntervalSpec{{Every: time.Hour}}, d.Schedule.Spec.Intervals)

	// Toggle pauses and resumes it.
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/toggle", id), fl.admin, map[string]any{"enabled": false})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["enabled"])
	require.Nil(t, r.Body["next_run_at"])
	require.True(t, f.describeJobSchedule(t, id).Schedule.State.Paused)
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", id), fl.admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "job_disabled", r.Body["error"])
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/toggle", id), fl.admin, map[string]any{"enabled": true})
	require.Equal(t, 200, r.Status, r.Raw)
	require.False(t, f.describeJobSchedule(t, id).Schedule.State.Paused)

	// A once schedule is a calendar at that second.
	at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	r = f.do(t, "PUT", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, jobBody(asm, map[string]any{"type": "once", "at": at},
		map[string]any{"sites": []int64{fl.siteA}}))
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, at.Format(time.RFC3339), r.Body["next_run_at"])
	d = f.describeJobSchedule(t, id)
	require.Len(t, d.Schedule.Spec.Calendars, 1)
	require.Equal(t, []time.Time{at}, d.Info.NextActionTimes[:1])

	// Manual: no schedule.
	r = f.do(t, "PUT", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, jobBody(asm, map[string]any{"type": "manual"},
		map[string]any{"sites": []int64{fl.siteA}}))
	require.Equal(t, 200, r.Status, r.Raw)
	require.Nil(t, r.Body["next_run_at"])
	require.Nil(t, f.describeJobSchedule(t, id))

	// Back to cron, then delete: the schedule goes with the job.
	r = f.do(t, "PUT", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, jobBody(asm, map[string]any{"type": "cron", "expression": "0 3 * * *"},
		map[string]any{"sites": []int64{fl.siteA}}))
	require.Equal(t, 200, r.Status, r.Raw)
	require.NotNil(t, f.describeJobSchedule(t, id))
	r = f.do(t, "DELETE", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	require.Nil(t, f.describeJobSchedule(t, id))
	r = f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)
}

func TestScheduledJobValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	asm := f.testAssembly(t, fl.admin, "check", "script")
	flowAssembly := f.testAssembly(t, fl.admin, "flow content", "workflow")
	sites := map[string]any{"sites": []int64{fl.siteA}}
	cron := map[string]any{"type": "cron", "expression": "0 * * * *"}
	with := func(k string, v any) map[string]any {
		b := jobBody(asm, cron, sites)
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"blank name", with("name", "  "), "name"},
		{"long name", with("name", strings.Repeat("x", 201)), "name"},
		{"no kind", with("kind", ""), "kind"},
		{"unknown kind", with("kind", "patch_party"), "kind"},
		{"script without assembly", with("assembly_id", nil), "assembly_id"},
		{"unknown assembly", with("assembly_id", 99999), "assembly_id"},
		{"not a script or playbook assembly", with("assembly_id", flowAssembly), "assembly_id"},
		{"workflow job without workflow", map[string]any{"name": "w", "kind": "workflow", "targets": sites, "schedule": cron}, "workflow_id"},
		{"unknown workflow", map[string]any{"name": "w", "kind": "workflow", "workflow_id": 777, "targets": sites, "schedule": cron}, "workflow_id"},
		{"maintenance with assembly", map[string]any{"name": "m", "kind": "agent_maintenance", "assembly_id": asm, "targets": sites, "schedule": cron}, "assembly_id"},
		{"no targets", with("targets", map[string]any{}), "targets"},
		{"unknown device", with("targets", map[string]any{"devices": []string{"nope"}}), "targets.devices"},
		{"unknown site", with("targets", map[string]any{"sites": []int64{424242}}), "targets.sites"},
		{"filters", with("targets", map[string]any{"sites": []int64{fl.siteA}, "filters": []int64{1}}), "targets.filters"},
		{"no schedule type", with("schedule", map[string]any{}), "schedule.type"},
		{"bad schedule type", with("schedule", map[string]any{"type": "sometimes"}), "schedule.type"},
		{"bad cron", with("schedule", map[string]any{"type": "cron", "expression": "61 * * * *"}), "schedule.expression"},
		{"six-field cron", with("schedule", map[string]any{"type": "cron", "expression": "0 0 * * * *"}), "schedule.expression"},
		{"every in cron", with("schedule", map[string]any{"type": "cron", "expression": "@every 5m"}), "schedule.expression"},
		{"bad zone", with("schedule", map[string]any{"type": "cron", "expression": "0 * * * *", "timezone": "Mars/Olympus"}), "schedule.timezone"},
		{"local zone", with("schedule", map[string]any{"type": "cron", "expression": "0 * * * *", "timezone": "Local"}), "schedule.timezone"},
		{"once without at", with("schedule", map[string]any{"type": "once"}), "schedule.at"},
		{"once in the past", with("schedule", map[string]any{"type": "once", "at": "2001-01-01T00:00:00Z"}), "schedule.at"},
		{"short interval", with("schedule", map[string]any{"type": "interval", "every_seconds": 59}), "schedule.every_seconds"},
		{"long interval", with("schedule", map[string]any{"type": "interval", "every_seconds": 400 * 86400}), "schedule.every_seconds"},
		{"timeout", with("options", map[string]any{"timeout_seconds": 86401}), "options.timeout_seconds"},
		{"undeclared parameter", with("parameters", map[string]any{"nope": 1}), "parameters.nope"},
		{"mistyped parameter", with("parameters", map[string]any{"days": "many"}), "parameters.days"},
		{"negative timeout", with("options", map[string]any{"timeout_seconds": -1}), "options.timeout_seconds"},
		{"missing schedule", with("schedule", nil), "schedule"},
		{"missing targets", with("targets", nil), "targets"},
	}
	for _, c := range cases {
		r := f.do(t, "POST", "/api/scheduled_jobs", fl.admin, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], c.name)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}
	r := f.do(t, "GET", "/api/scheduled_jobs", fl.admin, nil)
	require.Empty(t, r.Body["jobs"], "nothing half-stored")

	// A scoped operator names only its own site's targets, sees only jobs
	// inside its scope, and an outside job answers like a missing one.
	op := f.scopedOperatorOf(t, fl.admin, "ops-a", fl.siteA)
	r = f.do(t, "POST", "/api/scheduled_jobs", op, with("targets", map[string]any{"sites": []int64{fl.siteB}}))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("targets.sites"))
	r = f.do(t, "POST", "/api/scheduled_jobs", op, with("targets", map[string]any{"devices": []string{"guid-off"}}))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("targets.devices"))
	r = f.do(t, "POST", "/api/scheduled_jobs", op, with("targets", map[string]any{"devices": []string{"guid-conn"}}))
	require.Equal(t, 201, r.Status, r.Raw)
	mine := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", "/api/scheduled_jobs", fl.admin, with("targets", map[string]any{"sites": []int64{fl.siteB}}))
	require.Equal(t, 201, r.Status, r.Raw)
	theirs := int64(r.Body["id"].(float64))
	r = f.do(t, "GET", "/api/scheduled_jobs", op, nil)
	require.Len(t, r.Body["jobs"], 1)
	require.Equal(t, float64(mine), r.Body["jobs"].([]any)[0].(map[string]any)["id"])
	for _, m := range []string{"GET", "DELETE"} {
		r = f.do(t, m, fmt.Sprintf("/api/scheduled_jobs/%d", theirs), op, nil)
		require.Equal(t, 404, r.Status, r.Raw)
	}
	require.Len(t, f.do(t, "GET", "/api/scheduled_jobs", fl.admin, nil).Body["jobs"], 2)
	r = f.do(t, "GET", "/api/scheduled_jobs/abc", fl.admin, nil)
	require.Equal(t, 400, r.Status, r.Raw)
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/toggle", mine), op, map[string]any{})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("enabled"))
}

func TestSchedulePreview(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	r := f.do(t, "POST", "/api/scheduled_jobs/schedule_preview", admin, map[string]any{"schedule": map[string]any{
		"type": "cron", "expression": "30 9 * * 1-5", "timezone": "America/New_York"}})
	require.Equal(t, 200, r.Status, r.Raw)
	runs := r.Body["next_runs"].([]any)
	require.Len(t, runs, 5)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	var prev time.Time
	for _, s := range runs {
		at, err := time.Parse(time.RFC3339, s.(string))
		require.NoError(t, err)
		require.Equal(t, time.UTC, at.Location())
		local := at.In(ny)
		require.Equal(t, 9, local.Hour())
		require.Equal(t, 30, local.Minute())
		require.NotContains(t, []time.Weekday{time.Saturday, time.Sunday}, local.Weekday())
		require.True(t, at.After(prev))
		prev = at
	}
	r = f.do(t, "POST", "/api/scheduled_jobs/schedule_preview", admin, map[string]any{"schedule": map[string]any{"type": "interval", "every_seconds": 3600}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["next_runs"], 5)
	for _, s := range r.Body["next_runs"].([]any) {
		at, _ := time.Parse(time.RFC3339, s.(string))
		require.Zero(t, at.Unix()%3600, "intervals align to the epoch like Temporal's")
	}
	r = f.do(t, "POST", "/api/scheduled_jobs/schedule_preview", admin, map[string]any{"schedule": map[string]any{"type": "manual"}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, r.Body["next_runs"])
	r = f.do(t, "POST", "/api/scheduled_jobs/schedule_preview", admin, map[string]any{"schedule": map[string]any{"type": "cron", "expression": "nope"}})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("schedule.expression"))
}

// Reconcile at start: PostgreSQL is the source of truth, so a schedule
// lost in Temporal comes back, a drifted one is put right and one whose
// job is gone is deleted.
func TestScheduledJobReconcile(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	asm := f.testAssembly(t, fl.admin, "rec", "script")
	ctx := context.Background()
	sched := f.jobScheduler()

	r := f.do(t, "POST", "/api/scheduled_jobs", fl.admin, jobBody(asm, map[string]any{"type": "cron", "expression": "0 4 * * *"},
		map[string]any{"sites": []int64{fl.siteA}}))
	require.Equal(t, 201, r.Status, r.Raw)
	lost := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", "/api/scheduled_jobs", fl.admin, jobBody(asm, map[string]any{"type": "interval", "every_seconds": 600},
		map[string]any{"sites": []int64{fl.siteA}}))
	require.Equal(t, 201, r.Status, r.Raw)
	drifted := int64(r.Body["id"].(float64))

	// Temporal loses one, an SRE edits another, and an orphan appears.
	require.NoError(t, temporalClient.ScheduleClient().GetHandle(ctx, sched.ScheduleID(lost)).Delete(ctx))
	require.NoError(t, temporalClient.ScheduleClient().GetHandle(ctx, sched.ScheduleID(drifted)).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 5 * time.Minute}}}
			s.Action.(*client.ScheduleWorkflowAction).Memo = map[string]any{"cairn_fingerprint": "edited"}
			return &client.ScheduleUpdate{Schedule: &s}, nil
		}}))
	orphan := sched.ScheduleID(999999)
	_, err := temporalClient.ScheduleClient().Create(ctx, client.ScheduleOptions{ID: orphan,
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: time.Hour}}},
		Action: &client.ScheduleWorkflowAction{ID: orphan, Workflow: workflows.ScheduledJobFire, TaskQueue: f.engineQueue,
			Args: []any{workflows.ScheduledJobFireInput{JobID: 999999}}}})
	require.NoError(t, err)
	require.Nil(t, f.describeJobSchedule(t, lost))

	// The schedule list is eventually consistent: the orphan must be
	// visible to the reconcile before it can be removed.
	require.Eventually(t, func() bool {
		require.NoError(t, f.engine.core.ReconcileJobSchedules(ctx))
		return f.describeJobSchedule(t, 999999) == nil
	}, time.Minute, 500*time.Millisecond)
	require.NotNil(t, f.describeJobSchedule(t, lost))
	d := f.describeJobSchedule(t, drifted)
	require.Equal(t, []client.ScheduleIntervalSpec{{Every: 10 * time.Minute}}, d.Schedule.Spec.Intervals)

	// A fresh Engine start does the same (here: nothing left to do).
	f.newEngine(t)
	require.NotNil(t, f.describeJobSchedule(t, lost))
}

// Activity rows of a job's runs carry its name, and go with the job.
func TestScheduledJobActivityLinks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	asm := f.testAssembly(t, fl.admin, "act", "script")
	ctx := context.Background()
	newJob := func(name string) int64 {
		b := jobBody(asm, map[string]any{"type": "manual"}, map[string]any{"devices": []string{"guid-conn"}})
		b["name"] = name
		r := f.do(t, "POST", "/api/scheduled_jobs", fl.admin, b)
		require.Equal(t, 201, r.Status, r.Raw)
		return int64(r.Body["id"].(float64))
	}
	deleted, cleared, kept := newJob("to delete"), newJob("to clear"), newJob("kept")
	for _, id := range []int64{deleted, cleared, kept} {
		_, err := f.engine.devices.RecordActivity(ctx, devices.NewActivity{GUID: "guid-conn", Hostname: "conn-host", SiteID: cairn.SiteID(fl.siteA),
			Kind: "script_run", Summary: "ran", Metadata: map[string]any{"scheduled_job_id": id, "run_id": fmt.Sprint("run-", id)}})
		require.NoError(t, err)
	}
	_, err := f.engine.devices.RecordActivity(ctx, devices.NewActivity{GUID: "guid-conn", Hostname: "conn-host", Kind: "service_restart", Summary: "other"})
	require.NoError(t, err)

	names := func() map[string]int {
		r := f.do(t, "GET", "/api/device/activity/conn-host", fl.admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		out := map[string]int{}
		for _, a := range r.Body["activity"].([]any) {
			meta := a.(map[string]any)["metadata"].(map[string]any)
			name, _ := meta["scheduled_job_name"].(string)
			out[name]++
		}
		return out
	}
	require.Equal(t, map[string]int{"to delete": 1, "to clear": 1, "kept": 1, "": 1}, names())

	r := f.do(t, "DELETE", fmt.Sprintf("/api/scheduled_jobs/%d", deleted), fl.admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	r = f.do(t, "DELETE", fmt.Sprintf("/api/scheduled_jobs/%d/runs", cleared), fl.admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	require.Equal(t, map[string]int{"kept": 1, "": 1}, names())
	r = f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs", cleared), fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, r.Body["runs"])
}

// A purge rewrites the targets of jobs that named the device.
func TestPurgeRewritesJobTargets(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	asm := f.testAssembly(t, fl.admin, "purge", "script")
	r := f.do(t, "POST", "/api/scheduled_jobs", fl.admin, jobBody(asm, map[string]any{"type": "manual"},
		map[string]any{"devices": []string{"guid-conn", "guid-disc"}, "sites": []int64{fl.siteB}}))
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	r = f.do(t, "POST", "/api/devices/guid-conn/purge", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d", id), fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, map[string]any{"devices": []any{"guid-disc"}, "sites": []any{float64(fl.siteB)}, "filters": []any{}}, r.Body["targets"])
}

func TestSiteWorkerSettings(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	op := f.operator(t, "plain-op")
	r := f.do(t, "GET", "/api/server/site-worker-settings", op, nil)
	require.Equal(t, 403, r.Status, r.Raw)
	r = f.do(t, "GET", "/api/server/site-worker-settings", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	sites := r.Body["sites"].([]any)
	require.Len(t, sites, 2)
	for _, s := range sites {
		m := s.(map[string]any)
		require.Equal(t, float64(4), m["scheduled_capacity"])
		require.Equal(t, float64(0), m["active_items"])
		require.NotEmpty(t, m["site_worker_slug"])
		require.Contains(t, m, "onboarding_capacity")
	}

	// Slots: capacity per site, idempotent per holder, freed on release.
	ctx := context.Background()
	lane := f.engine.core.Slots
	for i := range 4 {
		ok, err := lane.Acquire(ctx, fl.siteA, fmt.Sprint("holder-", i), "scheduled_job", time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err := lane.Acquire(ctx, fl.siteA, "holder-late", "scheduled_job", time.Hour)
	require.NoError(t, err)
	require.False(t, ok, "the lane is full")
	ok, err = lane.Acquire(ctx, fl.siteA, "holder-2", "scheduled_job", time.Hour)
	require.NoError(t, err)
	require.True(t, ok, "a holder keeps its slot")
	ok, err = lane.Acquire(ctx, fl.siteB, "holder-late", "scheduled_job", time.Hour)
	require.NoError(t, err)
	require.True(t, ok, "another site's lane is its own")
	r = f.do(t, "GET", "/api/server/site-worker-settings", fl.admin, nil)
	active := map[float64]float64{}
	for _, s := range r.Body["sites"].([]any) {
		m := s.(map[string]any)
		active[m["site_id"].(float64)] = m["active_items"].(float64)
	}
	require.Equal(t, map[float64]float64{float64(fl.siteA): 4, float64(fl.siteB): 1}, active)
	require.NoError(t, lane.Release(ctx, "holder-0"))
	ok, err = lane.Acquire(ctx, fl.siteA, "holder-late", "scheduled_job", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	// An expired lease frees its slot.
	ok, err = lane.Acquire(ctx, fl.siteA, "holder-1", "scheduled_job", -time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = lane.Acquire(ctx, fl.siteA, "holder-next", "scheduled_job", time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
}
