package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/proto"
	ipatches "github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// slotProbe is a patch machine that records, at each install, how many
// patch_install slots its site's scheduled lane holds.
type slotProbe struct {
	*patchMachine
	held func() int
	seen chan int
}

func (m slotProbe) Install(ctx context.Context, req proto.PatchInstallRequest, progress func(patches.Progress)) (proto.PatchInstallResult, error) {
	m.seen <- m.held()
	return m.patchMachine.Install(ctx, req, progress)
}

// A device's install action opens a draft of a patch_install scheduled
// job; saved and run, the job's fire takes a slot of the device's site
// lane (waiting while the lane is full), creates the install rows of its
// run and hands them to the device's patch lane, holds the slot while
// they install, and settles its run from the re-scan's confirmation.
// Drafts and jobs validate their patch keys and targets, and a scoped
// operator reaches only its own sites' devices.
func TestPatchInstallJobRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "pjob")
	other := f.createSite(t, admin, "pjob-other")
	core := f.engine.core
	probe := slotProbe{patchMachine: &patchMachine{installed: map[string]bool{}}, seen: make(chan int, 4),
		held: func() int {
			var n int
			require.NoError(t, core.Store.Pool.QueryRow(context.Background(),
				`SELECT count(*) FROM site_work_slots WHERE site_id = $1 AND kind = $2`, site, scheduledjobs.SlotPatchInstall).Scan(&n))
			return n
		}}
	a := f.patchAgent(t, admin, site, "pjob-01", probe)
	r := f.do(t, "POST", "/api/device/patches/pjob-01/refresh", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)

	// The draft: the job to review, nothing stored.
	r = f.do(t, "POST", "/api/device/patches/pjob-01/install-draft", admin, map[string]any{"patch_keys": []string{"pkg:hello=1.1"}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "patch_install", r.Body["job_kind"])
	require.Equal(t, "patch_install", r.Body["kind"])
	require.Equal(t, []any{"pkg:hello=1.1"}, r.Body["parameters"].(map[string]any)["patch_keys"])
	require.Equal(t, []any{a.guid}, r.Body["targets"].(map[string]any)["devices"])
	require.Equal(t, "once", r.Body["schedule"].(map[string]any)["type"])
	require.Empty(t, f.do(t, "GET", "/api/scheduled_jobs", admin, nil).Body["jobs"], "a draft is not saved")
	r = f.do(t, "POST", "/api/device/patches/pjob-01/install-draft", admin, map[string]any{"patch_keys": []string{"pkg:nope=1"}})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("patch_keys"), r.Raw)
	op := f.scopedOperatorOf(t, admin, "pjob-operator", other)
	r = f.do(t, "POST", "/api/device/patches/pjob-01/install-draft", op, map[string]any{})
	require.Equal(t, 404, r.Status, "outside the operator's sites: %s", r.Raw)

	job := func(params map[string]any, targets map[string]any) map[string]any {
		return map[string]any{"name": "install hello", "kind": "patch_install", "parameters": params, "targets": targets,
			"schedule": map[string]any{"type": "manual"}}
	}
	devices := map[string]any{"devices": []string{a.guid}}
	hello := map[string]any{"patch_keys": []string{"pkg:hello=1.1"}}
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no patch keys", job(map[string]any{}, devices), "parameters.patch_keys"},
		{"empty patch keys", job(map[string]any{"patch_keys": []string{}}, devices), "parameters.patch_keys"},
		{"not a list", job(map[string]any{"patch_keys": "pkg:hello=1.1"}, devices), "parameters.patch_keys"},
		{"not pending", job(map[string]any{"patch_keys": []string{"pkg:nope=1"}}, devices), "parameters.patch_keys"},
		{"site targets", job(hello, map[string]any{"sites": []int64{site}}), "targets"},
		{"assembly", func() map[string]any { b := job(hello, devices); b["assembly_id"] = 1; return b }(), "assembly_id"},
	} {
		r := f.do(t, "POST", "/api/scheduled_jobs", admin, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], c.name)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}
	r = f.do(t, "POST", "/api/scheduled_jobs", op, job(hello, devices))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("targets.devices"), "a device outside the operator's sites is unknown: %s", r.Raw)
	require.Empty(t, r.field("parameters.patch_keys"), "and tells nothing of its patches")

	r = f.do(t, "POST", "/api/scheduled_jobs", admin, job(hello, devices))
	require.Equal(t, 201, r.Status, r.Raw)
	jobID := int64(r.Body["id"].(float64))
	require.Equal(t, "patch_install", r.Body["kind"])
	require.Equal(t, []any{"pkg:hello=1.1"}, r.Body["parameters"].(map[string]any)["patch_keys"])

	// The site's lane is full: the fire waits for a slot, and no install
	// exists before it has one.
	for i := range core.Slots.Capacity {
		ok, err := core.Slots.Acquire(t.Context(), site, fmt.Sprintf("other-work-%d", i), scheduledjobs.SlotScheduledJob, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
	}
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", jobID), admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	runID := r.Body["run_id"].(string)
	fireID := core.JobSched.ScheduleID(jobID) + ":rerun:" + runID
	require.Eventually(t, func() bool {
		d, err := core.Temporal.DescribeWorkflowExecution(t.Context(), fireID, "")
		if err != nil {
			return false
		}
		for _, p := range d.PendingActivities {
			if p.ActivityType.GetName() == "AcquireSlot" && p.Attempt >= 2 {
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "the fire waits for a slot")
	var n int
	require.NoError(t, core.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM patch_installs WHERE run_id = $1`, runID).Scan(&n))
	require.Zero(t, n, "nothing is installed while the lane is full")
	require.NoError(t, core.Slots.Release(t.Context(), "other-work-0"))

	require.Eventually(t, func() bool {
		for _, i := range f.do(t, "GET", "/api/device/patches/pjob-01", admin, nil).Body["installs"].([]any) {
			m := i.(map[string]any)
			if m["run_id"] == runID && m["state"] == ipatches.StateInstalled {
				require.Equal(t, float64(jobID), m["scheduled_job_id"])
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond)
	require.Equal(t, 1, <-probe.seen, "the fire held a patch_install slot of the site while the agent installed")
	require.Eventually(t, func() bool {
		runs := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs", jobID), admin, nil).Body["runs"].([]any)
		return len(runs) == 1 && runs[0].(map[string]any)["status"] == "succeeded" &&
			runs[0].(map[string]any)["kind"] == "patch_install"
	}, time.Minute, 100*time.Millisecond, "the run settles from the confirmed install")
	require.Eventually(t, func() bool { return probe.held() == 0 }, time.Minute, 100*time.Millisecond,
		"the slot is freed once the run ended")
	require.NoError(t, core.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM patch_installs WHERE run_id = $1`, runID).Scan(&n))
	require.Equal(t, 1, n)
	for i := 1; i < core.Slots.Capacity; i++ {
		require.NoError(t, core.Slots.Release(t.Context(), fmt.Sprintf("other-work-%d", i)))
	}

	// Run again: hello is installed now, so the run skips the device.
	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", jobID), admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	again := r.Body["run_id"].(string)
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", jobID, again), admin, nil)
		if r.Status != 200 || r.Body["status"] != "succeeded" {
			return false
		}
		res := r.Body["results"].([]any)
		return len(res) == 1 && res[0].(map[string]any)["status"] == "skipped"
	}, time.Minute, 100*time.Millisecond)
}
