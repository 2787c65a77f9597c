package workflowclient_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// stallingClient is a Temporal client whose first stalls workflow starts
// fail as an overloaded frontend does (ResourceExhausted); later starts
// succeed. Only ExecuteWorkflow is used.
type stallingClient struct {
	client.Client
	stalls atomic.Int32
	starts atomic.Int32
}

func (c *stallingClient) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	if c.stalls.Add(-1) >= 0 {
		return nil, serviceerror.NewResourceExhausted(0, "too many requests")
	}
	c.starts.Add(1)
	return nil, nil
}

type testGranter struct{}

func (testGranter) Sign(context.Context, grants.Operation, time.Duration) (string, error) {
	return "grant", nil
}

// A Temporal stall while an agent_maintenance fire starts its updates
// (the starter answers the busy error, unavailable with a Retry-After) is
// retried by the fire, which then completes: unavailable is declared
// transient, so the activity's error is retryable.
func TestScheduledJobFireRetriesATemporalStall(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	// The starter's own retries take seconds of real time.
	env.SetTestTimeout(time.Minute)
	tc := &stallingClient{}
	// Longer than the starter's own retries: the starter answers busy.
	tc.stalls.Store(4)
	starter := workflowclient.AgentUpdateStarter{Client: tc, Grants: testGranter{}}
	env.RegisterActivityWithOptions(func(context.Context, activities.FireInput) (scheduledjobs.FirePlan, error) {
		return scheduledjobs.FirePlan{RunID: "run-1", Kind: scheduledjobs.KindAgentMaintenance, SiteIDs: []int64{1}}, nil
	}, activity.RegisterOptions{Name: "PrepareFire"})
	env.RegisterActivityWithOptions(func(context.Context, activities.SlotInput) error { return nil },
		activity.RegisterOptions{Name: "AcquireSlot"})
	env.RegisterActivityWithOptions(func(context.Context, string) error { return nil },
		activity.RegisterOptions{Name: "ReleaseSlots"})
	// What ScheduledJobs.RequestAgentMaintenance does with the updates it
	// requested: start each, converting the starter's error the same way.
	tries := 0
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.FireInput) (bool, error) {
		tries++
		err := starter.Start(ctx, agentupdates.Planned{OperationID: "op-1", RunID: in.RunID,
			Target: devices.OperationTarget{GUID: "guid-1", Hostname: "ALPHA", SiteID: 1, SiteSlug: "main"}})
		if err != nil {
			return false, activities.ApplicationError(err)
		}
		return true, nil
	}, activity.RegisterOptions{Name: "RequestAgentMaintenance"})
	env.RegisterActivityWithOptions(func(context.Context, string) (string, error) { return "completed", nil },
		activity.RegisterOptions{Name: "JobRunStatus"})

	env.ExecuteWorkflow(workflows.ScheduledJobFire, workflows.ScheduledJobFireInput{JobID: 4})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "a short overload does not fail the fire for good")
	require.Equal(t, 2, tries, "the stalled start was retried")
	require.EqualValues(t, 1, tc.starts.Load(), "the update was started once the stall passed")
	var res workflows.ScheduledJobFireResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, cairn.RunID("run-1"), res.RunID)
}
