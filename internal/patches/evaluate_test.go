package patches_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// An evaluation's installs belong to an immediate patch_install job and
// its run; when the job's fire cannot be started (Temporal refused it)
// the run's installs are finished as failed, so the next evaluation asks
// for them afresh rather than finding them open forever; a run that
// fired stays open and is not asked for again.
func TestEvaluateAbandonsWhatNoLaneTook(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true))
	site := cairn.SiteID(f.sites["a"])
	_, err := f.svc.CreatePolicy(t.Context(), cairn.AllSites, "admin", patches.PolicyInput{Name: "a", Type: patches.TypeSite,
		RoleScope: patches.RoleServer, SiteID: &site, Rules: []patches.Rule{{RuleType: patches.RuleCategory,
			MatchType: patches.MatchEquals, Value: "security", Action: patches.ActionApprove}}})
	require.NoError(t, err)

	res, queued, err := f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
	require.NoError(t, err)
	require.Empty(t, queued, "installs go through their job's fire, not straight to the lane")
	require.Len(t, res.Installs, 1)
	require.Len(t, res.Jobs, 1)
	job := res.Jobs[0]
	require.Equal(t, patches.JobStart{JobID: job.JobID, RunID: job.RunID, DeviceCount: 1, InstallCount: 1}, job)
	first := res.Installs[0].Install
	require.Equal(t, &job.JobID, first.ScheduledJobID)
	require.Equal(t, string(job.RunID), first.RunID)
	var kind, status string
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT j.kind, r.status FROM scheduled_jobs j JOIN job_runs r
		ON r.scheduled_job_id = j.id WHERE r.id = $1`, job.RunID).Scan(&kind, &status))
	require.Equal(t, []string{patches.JobKind, "running"}, []string{kind, status})

	refused := errors.New("temporal refused")
	err = f.svc.StartJobs(t.Context(), res.Jobs, func(context.Context, patches.JobStart) error { return refused })
	require.ErrorIs(t, err, refused)
	first, err = f.svc.Get(t.Context(), first.ID)
	require.NoError(t, err)
	require.Equal(t, patches.StateFailed, first.State)
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT status FROM job_runs WHERE id = $1`, job.RunID).Scan(&status))
	require.Equal(t, "failed", status, "the abandoned run is settled")

	res, _, err = f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
	require.NoError(t, err)
	require.Len(t, res.Installs, 1, "asked for afresh")
	require.NotEqual(t, first.ID, res.Installs[0].ID)
	require.NoError(t, f.svc.StartJobs(t.Context(), res.Jobs, func(context.Context, patches.JobStart) error { return nil }))
	res, _, err = f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
	require.NoError(t, err)
	require.Empty(t, res.Installs, "the open install is not asked for again")
	require.Empty(t, res.Jobs, "and no job is made for nothing")
}

// A device that says it needs a reboot and has nothing to install gets
// one inside its window when its policy reboots (when_required or
// always), queued on its site's lane; not again within
// RebootRetryInterval (a signed-in user skipped it), again after it; never
// under reboot_policy never or when the device needs none.
func TestEvaluateRebootsADeviceThatNeedsOneWithNothingToInstall(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a") // needs a reboot, site policy when_required
	f.device(t, "web-2", "a") // needs none
	f.device(t, "web-3", "b") // needs one, site policy never
	f.report(t, "web-1", &proto.PatchStatus{Provider: "apt", RebootRequired: true})
	f.report(t, "web-2", &proto.PatchStatus{Provider: "apt"})
	f.report(t, "web-3", &proto.PatchStatus{Provider: "apt", RebootRequired: true})
	for site, reboot := range map[string]string{"a": patches.RebootWhenRequired, "b": patches.RebootNever} {
		id := cairn.SiteID(f.sites[site])
		for _, role := range []string{patches.RoleServer, patches.RoleWorkstation} {
			_, err := f.svc.CreatePolicy(t.Context(), cairn.AllSites, "admin", patches.PolicyInput{Name: site + role, Type: patches.TypeSite,
				RoleScope: role, SiteID: &id, Rules: []patches.Rule{}, Defaults: patches.Defaults{RebootPolicy: reboot}})
			require.NoError(t, err)
		}
	}
	evaluate := func() (patches.EvaluateResult, []patches.Queued) {
		res, queued, err := f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
		require.NoError(t, err)
		require.Empty(t, res.Installs)
		return res, queued
	}

	res, queued := evaluate()
	require.Len(t, res.Reboots, 1)
	require.Equal(t, "web-1", res.Reboots[0].Hostname)
	require.True(t, res.Reboots[0].WhenRequired, "the agent checks the need itself")
	require.Len(t, queued, 1)
	require.Equal(t, patches.Target{GUID: "web-1", Hostname: "web-1", SiteSlug: "site-a"}, queued[0].Target)
	_, err := f.svc.ConcludeReboot(t.Context(), res.Reboots[0].ID, patches.RebootOutcome{Result: &proto.PatchRebootResult{
		Status: proto.PatchRebootSkippedLoggedIn, SignedIn: []string{"alice"}}})
	require.NoError(t, err)

	res, _ = evaluate()
	require.Empty(t, res.Reboots, "not asked again within the retry interval")

	// An hour on, the device still saying so is asked again.
	_, err = f.store.Pool.Exec(t.Context(), `UPDATE patch_reboots SET created_at = created_at - $1::interval`, "61 minutes")
	require.NoError(t, err)
	res, _ = evaluate()
	require.Len(t, res.Reboots, 1)
	require.Equal(t, "web-1", res.Reboots[0].Hostname)
}
