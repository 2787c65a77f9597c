package workers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn/workflows"
)

// Schedule policies of the maintenance jobs. Skip: a run still retrying
// (database down) is not joined by more. The catch-up window lets a
// schedule make up one missed start after a short Temporal outage
// without replaying hours of them after a long one.
const (
	scheduleOverlap       = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
	scheduleCatchupWindow = 10 * time.Minute
	// maintenanceRunTimeout ends a run that never succeeds, so a stuck
	// run cannot keep its schedule skipping for ever.
	maintenanceRunTimeout = time.Hour
)

// EnsureSchedules creates the maintenance schedules that are missing and
// updates those whose definition changed (interval, task queue, workflow,
// job, policies); a schedule an SRE paused stays paused. Every replica
// calls it at start: it is idempotent, and a schedule another replica
// created a moment earlier (AlreadyExists) counts as created.
func EnsureSchedules(ctx context.Context, c client.Client, dc converter.DataConverter, queue string, jobs []workflows.MaintenanceJob) error {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var errs []error
	for _, job := range jobs {
		if err := ensureSchedule(ctx, c, dc, queue, job); err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", workflows.MaintenanceScheduleID(job.Name), err))
		}
	}
	return errors.Join(errs...)
}

func ensureSchedule(ctx context.Context, c client.Client, dc converter.DataConverter, queue string, job workflows.MaintenanceJob) error {
	id := workflows.MaintenanceScheduleID(job.Name)
	want := maintenanceSchedule(queue, job)
	h := c.ScheduleClient().GetHandle(ctx, id)
	desc, err := h.Describe(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID: id, Spec: *want.Spec, Action: want.Action,
			Overlap: want.Policy.Overlap, CatchupWindow: want.Policy.CatchupWindow,
		})
		if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
			return nil
		}
		var exists *serviceerror.AlreadyExists
		if errors.As(err, &exists) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if scheduleMatches(desc.Schedule, want, job, dc) {
		return nil
	}
	return h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
		s := in.Description.Schedule
		s.Spec, s.Action, s.Policy = want.Spec, want.Action, want.Policy
		return &client.ScheduleUpdate{Schedule: &s}, nil
	}})
}

// maintenanceSchedule is the schedule a job should have.
func maintenanceSchedule(queue string, job workflows.MaintenanceJob) client.Schedule {
	return client.Schedule{
		Spec: &client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: job.Every}}},
		Action: &client.ScheduleWorkflowAction{
			ID:                       workflows.MaintenanceScheduleID(job.Name),
			Workflow:                 workflows.Maintenance,
			Args:                     []any{workflows.MaintenanceInput{Job: job.Name, Activity: job.Activity}},
			TaskQueue:                queue,
			WorkflowExecutionTimeout: maintenanceRunTimeout,
			TypedSearchAttributes: temporal.NewSearchAttributes(
				temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrJobKind).ValueSet(workflows.JobKindMaintenance(job.Name)),
			),
		},
		Policy: &client.SchedulePolicies{Overlap: scheduleOverlap, CatchupWindow: scheduleCatchupWindow},
	}
}

// scheduleMatches compares what EnsureSchedules controls with a described
// schedule (where the workflow is its type name and arguments payloads).
func scheduleMatches(have client.Schedule, want client.Schedule, job workflows.MaintenanceJob, dc converter.DataConverter) bool {
	if have.Spec == nil || have.Policy == nil {
		return false
	}
	every := func(s *client.ScheduleSpec) []client.ScheduleIntervalSpec { return s.Intervals }
	if !slices.Equal(every(have.Spec), every(want.Spec)) ||
		have.Policy.Overlap != want.Policy.Overlap || have.Policy.CatchupWindow != want.Policy.CatchupWindow {
		return false
	}
	act, ok := have.Action.(*client.ScheduleWorkflowAction)
	wantAct := want.Action.(*client.ScheduleWorkflowAction)
	if !ok || act.TaskQueue != wantAct.TaskQueue || act.ID != wantAct.ID ||
		act.Workflow != "Maintenance" || act.WorkflowExecutionTimeout != wantAct.WorkflowExecutionTimeout || len(act.Args) != 1 {
		return false
	}
	p, ok := act.Args[0].(*commonpb.Payload)
	var in workflows.MaintenanceInput
	return ok && dc.FromPayload(p, &in) == nil && in.Job == job.Name && in.Activity == job.Activity
}
