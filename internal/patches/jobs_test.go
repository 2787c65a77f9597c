package patches_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/patches"
)

func (f *fixture) patchJob(t *testing.T) int64 {
	t.Helper()
	var id int64
	require.NoError(t, f.store.Pool.QueryRow(t.Context(),
		`INSERT INTO scheduled_jobs (name, kind) VALUES ('patch job', 'patch_install') RETURNING id`).Scan(&id))
	return id
}

func (f *fixture) runTarget(guid, site string) patches.RunTarget {
	return patches.RunTarget{GUID: cairn.DeviceGUID(guid), Hostname: guid, SiteID: cairn.SiteID(f.sites[site]), SiteSlug: "site-" + site}
}

// A run of a patch_install job records its installs once: a fire retried
// or restarted (the Engine killed after the run was made) finds the run
// and asks for nothing again, even for installs that already finished;
// devices where none of the keys is pending are skipped; the run settles
// from its installs' outcomes.
func TestPatchRunIsRecordedOncePerRunID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	f.device(t, "web-2", "a")
	f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true), pending("curl", "8.0", "8.1", false))
	f.report(t, "web-2", nil, pending("curl", "8.0", "8.1", false))
	job := f.patchJob(t)
	req := patches.RunRequest{RunID: "run-1", JobID: job, Trigger: "rerun", Actor: "admin",
		Targets: []patches.RunTarget{f.runTarget("web-1", "a"), f.runTarget("web-2", "a")}, PatchKeys: []string{"pkg:openssl=3.0.2"}}
	created, err := f.svc.CreateRun(t.Context(), req)
	require.NoError(t, err)
	require.True(t, created)
	queued, err := f.svc.RunQueue(t.Context(), "run-1")
	require.NoError(t, err)
	require.Len(t, queued, 1)
	inst := queued[0].Install
	require.Equal(t, "pkg:openssl=3.0.2", inst.PatchKey)
	require.Equal(t, patches.Target{GUID: "web-1", Hostname: "web-1", SiteSlug: "site-a"}, queued[0].Target)
	require.Equal(t, &job, inst.ScheduledJobID)
	require.Equal(t, "run-1", inst.RunID)

	// The install ran and finished; the fire is retried from the start.
	_, run, err := f.svc.Begin(t.Context(), inst.ID)
	require.NoError(t, err)
	require.True(t, run)
	f.report(t, "web-1", nil, installed("openssl", "3.0.2"), pending("curl", "8.0", "8.1", false))
	code := 0
	_, err = f.svc.Conclude(t.Context(), inst.ID, patches.Outcome{Result: &proto.PatchInstallResult{Status: proto.PatchInstallDone,
		ExitCode: &code}, Rescanned: true})
	require.NoError(t, err)
	f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true)) // even were it pending again
	created, err = f.svc.CreateRun(t.Context(), req)
	require.NoError(t, err)
	require.False(t, created, "the run exists: nothing is asked for again")
	queued, err = f.svc.RunQueue(t.Context(), "run-1")
	require.NoError(t, err)
	require.Empty(t, queued, "the finished install is not handed to the lane again")
	var installs int
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM patch_installs WHERE run_id = 'run-1'`).Scan(&installs))
	require.Equal(t, 1, installs)

	open, err := f.svc.SettleRun(t.Context(), "run-1")
	require.NoError(t, err)
	require.Zero(t, open)
	results := map[string]string{}
	rows, err := f.store.Pool.Query(t.Context(), `SELECT device_guid, status FROM job_run_results WHERE run_id = 'run-1'`)
	require.NoError(t, err)
	for rows.Next() {
		var g, s string
		require.NoError(t, rows.Scan(&g, &s))
		results[g] = s
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{"web-1": "succeeded", "web-2": "skipped"}, results)
	var status string
	require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT status FROM job_runs WHERE id = 'run-1'`).Scan(&status))
	require.Equal(t, "succeeded", status)
}

// A device's install action opens a draft of a patch_install job for its
// pending rows (the ones named, or all); rows not pending, devices out of
// scope and devices with nothing pending are refused.
func TestInstallDraft(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	f.device(t, "web-2", "a")
	f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true), pending("curl", "8.0", "8.1", false), installed("bash", "5.2"))
	f.report(t, "web-2", nil, installed("bash", "5.2"))

	d, err := f.svc.InstallDraft(t.Context(), cairn.AllSites, "web-1", []string{"pkg:openssl=3.0.2"})
	require.NoError(t, err)
	require.Equal(t, patches.JobKind, d.JobKind)
	require.Equal(t, patches.JobKind, d.Kind)
	require.Equal(t, "Install openssl 3.0.2 on web-1", d.Name)
	require.Equal(t, map[string]any{patches.ParamPatchKeys: []string{"pkg:openssl=3.0.2"}}, d.Parameters)
	require.Equal(t, []string{"web-1"}, d.Targets.Devices)
	require.Equal(t, "once", d.Schedule.Type)
	require.Len(t, d.Patches, 1)

	d, err = f.svc.InstallDraft(t.Context(), cairn.AllSites, "web-1", nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"pkg:openssl=3.0.2", "pkg:curl=8.1"}, d.Parameters[patches.ParamPatchKeys])
	require.Equal(t, "Install 2 patches on web-1", d.Name)

	for name, tc := range map[string]struct {
		scope    cairn.SiteScope
		hostname string
		keys     []string
		code     string
	}{
		"installed row":   {cairn.AllSites, "web-1", []string{"pkg:bash=5.2"}, cairn.ECodeValidation},
		"unknown row":     {cairn.AllSites, "web-1", []string{"pkg:nope=1"}, cairn.ECodeValidation},
		"nothing pending": {cairn.AllSites, "web-2", nil, cairn.ECodeValidation},
		"out of scope":    {cairn.SiteScope{SiteIDs: []int64{f.sites["b"]}}, "web-1", nil, cairn.ECodeNotFound},
	} {
		_, err := f.svc.InstallDraft(t.Context(), tc.scope, tc.hostname, tc.keys)
		require.True(t, cairn.IsCode(err, tc.code), "%s: %v", name, err)
	}
}
