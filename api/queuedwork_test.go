package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	agentautomation "github.com/cairn-rmm/cairn/agent/automation"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// A run that waits for offline devices (scheduled jobs with
// run_when_online) keeps an offline device's work pending; the agent asks
// for it when it is back, runs it with the real runner and posts the
// result, which closes the run.
func TestQueuedWorkRunsWhenTheAgentAsks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "queued")
	a := f.enrolled(t, admin, site, "queued-01")
	s := &scriptAgent{testAgent: a, trusted: a.scriptKeys}
	ctx := context.Background()

	idle := a.device(t, "POST", proto.PathScriptRequest, nil)
	require.Equal(t, 200, idle.Status, idle.Raw)
	require.Equal(t, "idle", idle.Body["status"])

	svc := automation.NewService(f.store, scriptsign.New(f.store, f.engine.cipher), f.engine.devices)
	run, err := svc.CreateRun(ctx, automation.RunSpec{Kind: automation.RunScheduledJob, Language: "sh", Body: "echo back online",
		RequestedBy: "admin", RunWhenOnline: true,
		Targets: []devices.OperationTarget{{GUID: cairn.DeviceGUID(a.guid), Hostname: "queued-01", SiteID: cairn.SiteID(site), SiteSlug: siteSlug(t, f, admin, site)}}})
	require.NoError(t, err)
	starter := workflowclient.JobRunStarter{Client: temporalClient, TaskQueue: f.engineQueue}
	require.NoError(t, starter.Start(ctx, workflows.JobRunInput{RunID: run.ID}))

	require.Eventually(t, func() bool {
		r := f.do(t, "GET", "/api/scripts/quick_run/"+string(run.ID), admin, nil)
		res := onlyResult(t, r)
		return res["status"] == "pending" && res["error_code"] == automation.ECodeQueuedOffline
	}, 60*time.Second, 100*time.Millisecond)

	queued, err := agentautomation.Queued(agentautomation.Options{Config: s.config, TempDir: t.TempDir()})
	require.NoError(t, err)
	queued(ctx, s)
	r := f.finishedRun(t, admin, string(run.ID))
	res := onlyResult(t, r)
	require.Equal(t, "succeeded", res["status"], r.Raw)
	require.Equal(t, "back online\n", res["stdout"])
	require.Equal(t, "succeeded", r.Body["status"])

	// Handed out once: asking again finds nothing.
	again := a.device(t, "POST", proto.PathScriptRequest, nil)
	require.Equal(t, "idle", again.Body["status"])
}

func siteSlug(t *testing.T, f *fixture, admin string, site int64) string {
	t.Helper()
	r := f.do(t, "GET", "/api/sites", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	for _, x := range r.Body["sites"].([]any) {
		m := x.(map[string]any)
		if int64(m["site_id"].(float64)) == site {
			return m["site_worker_slug"].(string)
		}
	}
	t.Fatalf("no site %d", site)
	return ""
}

// A run whose workflow could not be started is discarded, so it does not
// stay pending for ever; a run whose workflow started is kept.
func TestDiscardRunKeepsOnlyStartedRuns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "discard")
	a := f.enrolled(t, admin, site, "discard-01")
	ctx := context.Background()
	svc := automation.NewService(f.store, scriptsign.New(f.store, f.engine.cipher), f.engine.devices)
	newRun := func() automation.Run {
		run, err := svc.CreateRun(ctx, automation.RunSpec{Kind: automation.RunQuick, Language: "sh", Body: "true", RequestedBy: "admin",
			Targets: []devices.OperationTarget{{GUID: cairn.DeviceGUID(a.guid), Hostname: "discard-01", SiteID: cairn.SiteID(site), SiteSlug: siteSlug(t, f, admin, site)}}})
		require.NoError(t, err)
		return run
	}

	never := newRun()
	require.Equal(t, 200, f.do(t, "GET", string("/api/scripts/quick_run/"+never.ID), admin, nil).Status)
	require.NoError(t, svc.DiscardRun(ctx, never.ID))
	require.Equal(t, 404, f.do(t, "GET", string("/api/scripts/quick_run/"+never.ID), admin, nil).Status)

	started := newRun()
	starter := workflowclient.JobRunStarter{Client: temporalClient, TaskQueue: f.engineQueue}
	require.NoError(t, starter.Start(ctx, workflows.JobRunInput{RunID: started.ID}))
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", string("/api/scripts/quick_run/"+started.ID), admin, nil)
		return r.Body["started_at"] != nil
	}, 60*time.Second, 100*time.Millisecond)
	require.NoError(t, svc.DiscardRun(ctx, started.ID))
	require.Equal(t, 200, f.do(t, "GET", string("/api/scripts/quick_run/"+started.ID), admin, nil).Status)
}
