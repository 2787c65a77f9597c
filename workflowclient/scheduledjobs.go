package workflowclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/workflows"
)

// jobScheduleOverlap: a job whose previous run is still going does not
// start a second one beside it (its targets would get the same work
// twice). The catch-up window is workflows.JobCatchupWindow.
const jobScheduleOverlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP

const pausedNote = "disabled in Cairn"

// JobScheduler mirrors scheduled jobs as Temporal Schedules
// (scheduledjobs.Schedules) and reconciles them from PostgreSQL.
type JobScheduler struct {
	Client client.Client
	// TaskQueue runs the fire workflows (the Engine queue).
	TaskQueue string
	// Prefix is workflows.ScheduledJobSchedulePrefix unless tests that
	// share one Temporal server give each database its own.
	Prefix string
	// Data reads a described schedule's memo: the Client's data converter,
	// which seals payloads (nil: the SDK's default).
	Data converter.DataConverter
}

func (s JobScheduler) prefix() string { return cmp.Or(s.Prefix, workflows.ScheduledJobSchedulePrefix) }

// ScheduleID names a job's schedule.
func (s JobScheduler) ScheduleID(id int64) string { return s.prefix() + strconv.FormatInt(id, 10) }

func (s JobScheduler) queue() string { return cmp.Or(s.TaskQueue, workflows.EngineTaskQueue) }

// Apply makes a job's schedule match it.
func (s JobScheduler) Apply(ctx context.Context, job scheduledjobs.Job) error {
	if !job.Schedule.Fires() {
		return s.Remove(ctx, job.ID)
	}
	want, err := s.schedule(job)
	if err != nil {
		return err
	}
	return EnsureSchedule(ctx, s.Client, s.Data, want)
}

// Remove deletes a job's schedule; an absent one is fine.
func (s JobScheduler) Remove(ctx context.Context, id int64) error {
	err := s.Client.ScheduleClient().GetHandle(ctx, s.ScheduleID(id)).Delete(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	return err
}

// Start fires a job now as run runID (a rerun), through the same
// workflow a schedule fires.
func (s JobScheduler) Start(ctx context.Context, job scheduledjobs.Job, runID cairn.RunID, actor string) error {
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       s.ScheduleID(job.ID) + ":rerun:" + string(runID),
		TaskQueue:                s.queue(),
		WorkflowExecutionTimeout: workflows.JobFireTimeout,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    temporal.NewSearchAttributes(jobKindUpdate(job)),
	}, workflows.ScheduledJobFire, workflows.ScheduledJobFireInput{JobID: job.ID, RunID: runID, Trigger: workflows.TriggerRerun, Actor: actor})
	return err
}

// Reconcile makes Temporal's job schedules match jobs (every operator job
// in PostgreSQL): missing ones are created, drifted ones updated, and
// schedules under the prefix whose job is gone or manual are deleted. It
// runs at every Engine start, so a wiped or restored Temporal loses no
// job and a deleted job leaves no schedule behind.
func (s JobScheduler) Reconcile(ctx context.Context, jobs []scheduledjobs.Job) (created, deleted int, err error) {
	want := map[string]bool{}
	var errs []error
	for _, j := range jobs {
		if !j.Schedule.Fires() {
			continue
		}
		want[s.ScheduleID(j.ID)] = true
		if err := s.Apply(ctx, j); err != nil {
			errs = append(errs, fmt.Errorf("job %d: %w", j.ID, err))
		}
	}
	iter, err := s.Client.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return 0, 0, errors.Join(append(errs, err)...)
	}
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			errs = append(errs, err)
			break
		}
		rest, ok := strings.CutPrefix(e.ID, s.prefix())
		if !ok || want[e.ID] {
			continue
		}
		if n, err := strconv.ParseInt(rest, 10, 64); err != nil || n <= 0 {
			continue // another prefix's (a test's) or not ours
		}
		err = s.Client.ScheduleClient().GetHandle(ctx, e.ID).Delete(ctx)
		var notFound *serviceerror.NotFound
		if err != nil && !errors.As(err, &notFound) {
			errs = append(errs, fmt.Errorf("delete orphan %s: %w", e.ID, err))
			continue
		}
		deleted++
	}
	return len(want), deleted, errors.Join(errs...)
}

// schedule is the Temporal Schedule a job should have.
func (s JobScheduler) schedule(job scheduledjobs.Job) (Schedule, error) {
	spec := client.ScheduleSpec{}
	switch job.Schedule.Type {
	case scheduledjobs.ScheduleCron:
		spec.CronExpressions = []string{job.Schedule.Expression}
		spec.TimeZoneName = job.Schedule.Timezone
	case scheduledjobs.ScheduleInterval:
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: time.Duration(job.Schedule.EverySeconds) * time.Second}}
	case scheduledjobs.ScheduleOnce:
		if job.Schedule.At == nil {
			return Schedule{}, fmt.Errorf("once schedule without a time")
		}
		at := job.Schedule.At.UTC()
		r := func(v int) []client.ScheduleRange { return []client.ScheduleRange{{Start: v}} }
		spec.Calendars = []client.ScheduleCalendarSpec{{Second: r(at.Second()), Minute: r(at.Minute()), Hour: r(at.Hour()),
			DayOfMonth: r(at.Day()), Month: r(int(at.Month())), Year: r(at.Year()), DayOfWeek: []client.ScheduleRange{{Start: 0, End: 6}}}}
		spec.TimeZoneName = "UTC"
	default:
		return Schedule{}, fmt.Errorf("schedule type %q does not fire", job.Schedule.Type)
	}
	paused := !job.Enabled
	return Schedule{
		ID:   s.ScheduleID(job.ID),
		Spec: spec,
		Action: &client.ScheduleWorkflowAction{
			ID:                       s.ScheduleID(job.ID),
			Workflow:                 workflows.ScheduledJobFire,
			Args:                     []any{workflows.ScheduledJobFireInput{JobID: job.ID}},
			TaskQueue:                s.queue(),
			WorkflowExecutionTimeout: workflows.JobFireTimeout,
			TypedSearchAttributes:    temporal.NewSearchAttributes(jobKindUpdate(job)),
		},
		Policy: client.SchedulePolicies{Overlap: jobScheduleOverlap, CatchupWindow: workflows.JobCatchupWindow},
		Paused: &paused,
		Note:   pausedNote,
		// The fingerprint of schedules made before EnsureSchedule: the
		// same bytes, so an upgrade updates none of them.
		Definition: struct {
			V        int
			Schedule scheduledjobs.Schedule
			Queue    string
			Overlap  enumspb.ScheduleOverlapPolicy
			Catchup  time.Duration
			Timeout  time.Duration
		}{1, job.Schedule, s.queue(), jobScheduleOverlap, workflows.JobCatchupWindow, workflows.JobFireTimeout},
	}, nil
}

func jobKindUpdate(job scheduledjobs.Job) temporal.SearchAttributeUpdate {
	return temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrJobKind).ValueSet("scheduled_job_" + job.Kind)
}
