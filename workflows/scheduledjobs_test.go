package workflows_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/workflows"
)

// holdAndWork is bulk work that holds its sites' lane slots.
func holdAndWork(ctx workflow.Context, sites []int64) error {
	release, err := workflows.HoldSiteSlots(ctx, sites, "item-1", scheduledjobs.SlotAgentMaintenance)
	if err != nil {
		return err
	}
	defer release()
	return nil
}

// A full lane makes the item wait (lane_full is retried), slots are taken
// in ascending site order, and released when the work ends.
func TestHoldSiteSlotsWaitsForAFullLane(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(holdAndWork)
	var order []int64
	full := 3
	released := []string{}
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.SlotInput) error {
		if in.SiteID == 2 && full > 0 {
			full--
			return temporal.NewApplicationError("full", activities.ErrTypeLaneFull)
		}
		order = append(order, int64(in.SiteID))
		require.Equal(t, scheduledjobs.SlotAgentMaintenance, in.Kind)
		return nil
	}, activity.RegisterOptions{Name: "AcquireSlot"})
	env.RegisterActivityWithOptions(func(_ context.Context, holder string) error {
		released = append(released, holder)
		return nil
	}, activity.RegisterOptions{Name: "ReleaseSlots"})
	env.ExecuteWorkflow(holdAndWork, []int64{3, 2, 1})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []int64{1, 2, 3}, order)
	require.Zero(t, full, "the full lane was asked again until it had room")
	require.Equal(t, []string{"item-1"}, released)
}

// A fire of a job deleted since runs nothing and holds no slot.
func TestScheduledJobFireSkips(t *testing.T) {
	t.Parallel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	var got activities.FireInput
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.FireInput) (scheduledjobs.FirePlan, error) {
		got = in
		return scheduledjobs.FirePlan{Skip: "the job was deleted"}, nil
	}, activity.RegisterOptions{Name: "PrepareFire"})
	env.ExecuteWorkflow(workflows.ScheduledJobFire, workflows.ScheduledJobFireInput{JobID: 9})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res workflows.ScheduledJobFireResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "the job was deleted", res.Skip)
	require.Equal(t, workflows.TriggerSchedule, got.Trigger, "a fire without a run ID is the schedule's")
	require.NotNil(t, got.ScheduledFor)
}
