package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/workflows"
)

type fakeWorkers struct{ restarts map[string]int }

func (f *fakeWorkers) RestartAfter(queue, request string, after <-chan struct{}) (bool, bool) {
	f.restarts[queue+"/"+request]++
	return true, true
}

func (f *fakeWorkers) Identity() string { return "cairn@test:1" }

func runServiceAction(t *testing.T, a serveradmin.ServiceAction, acts *activities.ServiceAdmin) (workflows.ServiceActionResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(acts)
	env.ExecuteWorkflow(workflows.ServiceAction, workflows.ServiceActionInput{ID: "a-1", Action: a, Actor: "alice"})
	require.True(t, env.IsWorkflowCompleted())
	var res workflows.ServiceActionResult
	if err := env.GetWorkflowError(); err != nil {
		return res, err
	}
	require.NoError(t, env.GetWorkflowResult(&res))
	return res, nil
}

func TestServiceActionRestartsASiteWorkerOnItsQueue(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	w := &fakeWorkers{restarts: map[string]int{}}
	started := time.Now().Add(time.Hour).UTC().Round(0) // after the restart was asked
	acts := &activities.ServiceAdmin{Workers: w, Started: func(string) (time.Time, bool) { return started, true }}
	env.RegisterActivity(acts)
	var queues []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		queues = append(queues, info.TaskQueue)
	})
	a := serveradmin.ServiceAction{Service: "worker:site:hq", Action: serveradmin.ActionRestart, SiteSlug: "hq"}
	env.ExecuteWorkflow(workflows.ServiceAction, workflows.ServiceActionInput{ID: "a-1", Action: a, Actor: "alice"})
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ServiceActionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, map[string]int{"site:hq/a-1": 1}, w.restarts)
	require.Equal(t, []string{"site:hq", "site:hq"}, queues, "both steps run on the site's own queue")
	require.Equal(t, started, res.Serving.StartedAt)
	require.Contains(t, res.Detail, "restarted in cairn@test:1")
	require.Equal(t, "service-action:worker:site:hq:restart:a-1", workflows.ServiceActionWorkflowID(a, "a-1"))
	svc, act, id, ok := workflows.ParseServiceActionWorkflowID("service-action:worker:site:hq:restart:a-1")
	require.True(t, ok)
	require.Equal(t, []string{"worker:site:hq", "restart", "a-1"}, []string{svc, act, id})
}

func TestServiceActionCertificateAndTunnels(t *testing.T) {
	t.Parallel()
	w := &fakeWorkers{restarts: map[string]int{}}
	acts := &activities.ServiceAdmin{Workers: w,
		Certificate: func() (activities.CertificateState, activities.CertificateState, error) {
			return activities.CertificateState{Fingerprint: "aa"}, activities.CertificateState{Fingerprint: "bb"}, nil
		},
		Tunnels: func(_ context.Context, actor string) ([]string, error) {
			return []string{"tunnel:g-1", "tunnel:g-2"}, nil
		},
	}
	res, err := runServiceAction(t, serveradmin.ServiceAction{Service: "edge", Action: serveradmin.ActionReloadCertificate}, acts)
	require.NoError(t, err)
	require.True(t, res.Certificate.Replaced)
	require.Equal(t, "the certificate was replaced", res.Detail)

	res, err = runServiceAction(t, serveradmin.ServiceAction{Service: "tunnels", Action: serveradmin.ActionReconcileTunnels}, acts)
	require.NoError(t, err)
	require.Equal(t, []string{"tunnel:g-1", "tunnel:g-2"}, res.Tunnels)
	require.Equal(t, "tunnel establishment queued for 2 active tunnels", res.Detail)

	// HTTPS off: the reload fails at once with a reason, no retry.
	_, err = runServiceAction(t, serveradmin.ServiceAction{Service: "edge", Action: serveradmin.ActionReloadCertificate},
		&activities.ServiceAdmin{Workers: w})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, "NoCertificate", app.Type())
}

// After a restart, the old worker of the restarting process (still
// stopping) may not confirm it; the new one, or another process serving
// the queue, does.
func TestSiteWorkerServingOnlyFromAWorkerThatStartedAgain(t *testing.T) {
	t.Parallel()
	asked := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		process string
		started time.Time
		running bool
		ok      bool
	}{
		{"the old worker", "cairn@test:1", asked.Add(-time.Hour), true, false},
		{"none yet", "cairn@test:1", time.Time{}, false, false},
		{"the new worker", "cairn@test:1", asked.Add(time.Second), true, true},
		{"another process", "cairn@other:2", asked.Add(-time.Hour), true, true},
	} {
		a := &activities.ServiceAdmin{Workers: &fakeWorkers{}, Started: func(string) (time.Time, bool) { return c.started, c.running }}
		_, err := a.SiteWorkerServing(context.Background(), "site:hq", activities.WorkerRestart{Process: c.process, RequestedAt: asked})
		if c.ok {
			require.NoError(t, err, c.name)
		} else {
			require.Error(t, err, c.name)
		}
	}
}
