package workers

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn/workflowclient"
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
// job and its activity, policies: the fingerprint workflowclient.EnsureSchedule keeps in
// each schedule's memo); a schedule an SRE paused stays paused. Every
// replica calls it at start: it is idempotent, and a schedule another
// replica created a moment earlier is checked rather than made twice.
func EnsureSchedules(ctx context.Context, c client.Client, dc converter.DataConverter, queue string, jobs []workflows.MaintenanceJob) error {
	var errs []error
	for _, job := range jobs {
		if err := workflowclient.EnsureSchedule(ctx, c, dc, maintenanceSchedule(queue, job)); err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", workflows.MaintenanceScheduleID(job.Name), err))
		}
	}
	return errors.Join(errs...)
}

// maintenanceSchedule is the schedule a job should have. Its paused state
// is left alone: an SRE's pause stays.
func maintenanceSchedule(queue string, job workflows.MaintenanceJob) workflowclient.Schedule {
	return workflowclient.Schedule{
		ID:   workflows.MaintenanceScheduleID(job.Name),
		Spec: client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: job.Every}}},
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
		Policy: client.SchedulePolicies{Overlap: scheduleOverlap, CatchupWindow: scheduleCatchupWindow},
		Definition: struct {
			V        int
			Workflow string
			Job      string
			Activity string
			Every    time.Duration
			Queue    string
			Overlap  enumspb.ScheduleOverlapPolicy
			Catchup  time.Duration
			Timeout  time.Duration
		}{1, "Maintenance", job.Name, job.Activity, job.Every, queue, scheduleOverlap, scheduleCatchupWindow, maintenanceRunTimeout},
	}
}
