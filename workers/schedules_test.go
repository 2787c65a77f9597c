package workers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflows"
)

// The maintenance schedules are created once however many replicas ask at
// the same time, put back when their definition drifts (a pause stays),
// and a scheduled start really runs the job on the queue's worker.
func TestEnsureSchedulesCreatesAndIsIdempotent(t *testing.T) {
	ctx := context.Background()
	queue := "schedules-" + uuid.NewString()[:8]
	sessions := &countingSweeper{n: 3}
	w := worker.New(temporalClient, queue, worker.Options{})
	for _, wf := range engine.Workflows() {
		w.RegisterWorkflow(wf)
	}
	w.RegisterActivity(&activities.Maintenance{Sessions: sessions})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	// Three replicas start at once.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = workers.EnsureSchedules(ctx, temporalClient, nil, queue, engine.MaintenanceJobs())
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	requireSchedules(t, queue)
	require.NoError(t, workers.EnsureSchedules(ctx, temporalClient, nil, queue, engine.MaintenanceJobs()), "again: nothing to do")

	// Drift: a schedule an older definition made (another interval, and
	// the fingerprint of that definition in its memo), and a pause.
	h := temporalClient.ScheduleClient().GetHandle(ctx, workflows.MaintenanceScheduleID(workflows.JobSessions))
	require.NoError(t, h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Spec = &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: 7 * time.Minute}}}
		s.Action.(*client.ScheduleWorkflowAction).Memo = map[string]any{"cairn_fingerprint": "an older definition"}
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}}))
	// Updates and pauses are signals to the scheduler, applied in their
	// own time: wait for each to show, as an SRE's would long before the
	// next Engine start.
	require.Eventually(t, func() bool {
		d, err := h.Describe(ctx)
		return err == nil && len(d.Schedule.Spec.Intervals) == 1 && d.Schedule.Spec.Intervals[0].Every == 7*time.Minute
	}, 60*time.Second, 50*time.Millisecond, "the hand-made change shows")
	require.NoError(t, h.Pause(ctx, client.SchedulePauseOptions{Note: "SRE pause"}))
	require.Eventually(t, func() bool {
		d, err := h.Describe(ctx)
		return err == nil && d.Schedule.State.Paused
	}, 60*time.Second, 50*time.Millisecond, "the pause shows")
	require.NoError(t, workers.EnsureSchedules(ctx, temporalClient, nil, queue, engine.MaintenanceJobs()))
	requireSchedules(t, queue)
	desc, err := h.Describe(ctx)
	require.NoError(t, err)
	require.True(t, desc.Schedule.State.Paused, "a paused schedule stays paused")

	// A start (triggered now rather than waited for) runs the job.
	require.NoError(t, h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}))
	var run *client.ScheduleWorkflowExecution
	require.Eventually(t, func() bool {
		d, err := h.Describe(ctx)
		require.NoError(t, err)
		if len(d.Info.RecentActions) == 0 {
			return false
		}
		run = d.Info.RecentActions[0].StartWorkflowResult
		return true
	}, 60*time.Second, 50*time.Millisecond)
	var res workflows.MaintenanceResult
	require.NoError(t, temporalClient.GetWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID).Get(ctx, &res))
	require.Equal(t, workflows.MaintenanceResult{Job: workflows.JobSessions, Deleted: 3}, res)

	// A job whose capability now names another activity: its schedule's
	// input follows (the activity is part of the fingerprint).
	jobs := engine.MaintenanceJobs()
	for i := range jobs {
		if jobs[i].Name == workflows.JobSessions {
			jobs[i].Activity = "SweepSessionsElsewhere"
		}
	}
	require.NoError(t, workers.EnsureSchedules(ctx, temporalClient, nil, queue, jobs))
	require.Eventually(t, func() bool {
		d, err := h.Describe(ctx)
		return err == nil && scheduleInput(t, d).Activity == "SweepSessionsElsewhere"
	}, 60*time.Second, 50*time.Millisecond, "the schedule names the new activity")
}

// scheduleInput decodes the Maintenance input a described schedule starts
// its runs with.
func scheduleInput(t *testing.T, d *client.ScheduleDescription) workflows.MaintenanceInput {
	t.Helper()
	act, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Len(t, act.Args, 1)
	p, ok := act.Args[0].(*commonpb.Payload)
	require.True(t, ok)
	var in workflows.MaintenanceInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &in))
	return in
}

// requireSchedules checks every job's schedule against its definition.
func requireSchedules(t *testing.T, queue string) {
	t.Helper()
	ctx := context.Background()
	for _, job := range engine.MaintenanceJobs() {
		d, err := temporalClient.ScheduleClient().GetHandle(ctx, workflows.MaintenanceScheduleID(job.Name)).Describe(ctx)
		require.NoError(t, err, job.Name)
		require.Equal(t, []client.ScheduleIntervalSpec{{Every: job.Every}}, d.Schedule.Spec.Intervals, job.Name)
		require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, d.Schedule.Policy.Overlap, job.Name)
		require.Positive(t, d.Schedule.Policy.CatchupWindow, job.Name)
		act, ok := d.Schedule.Action.(*client.ScheduleWorkflowAction)
		require.True(t, ok, job.Name)
		require.Equal(t, queue, act.TaskQueue, job.Name)
		require.Equal(t, "Maintenance", act.Workflow, job.Name)
		require.Equal(t, workflows.MaintenanceInput{Job: job.Name, Activity: job.Activity}, scheduleInput(t, d), job.Name)
	}
}

type countingSweeper struct {
	mu sync.Mutex
	n  int64
}

func (c *countingSweeper) DeleteExpiredSessions(context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, nil
}

func (c *countingSweeper) DeleteExpiredPendingTokens(context.Context) error { return nil }
