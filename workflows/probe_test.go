package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/workflows"
)

func TestWorkerProbeReportsTheAnsweringWorker(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Probe{Identity: "cairn@test/site:hq"})
	env.ExecuteWorkflow(workflows.WorkerProbe)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var id activities.WorkerIdentity
	require.NoError(t, env.GetWorkflowResult(&id))
	require.Equal(t, "cairn@test/site:hq", id.Identity)
}

func TestSiteTaskQueueRoundTrips(t *testing.T) {
	t.Parallel()
	q := workflows.SiteTaskQueue("branch-2")
	require.Equal(t, "site:branch-2", q)
	slug, ok := workflows.SiteSlugFromQueue(q)
	require.True(t, ok)
	require.Equal(t, "branch-2", slug)
	_, ok = workflows.SiteSlugFromQueue(workflows.EngineTaskQueue)
	require.False(t, ok)
}
