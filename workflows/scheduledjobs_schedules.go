package workflows

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// ScheduledJobSchedulePrefix prefixes the Temporal Schedule of every
// scheduled job: `scheduled-job:<id>`. Its fires' workflow IDs are the
// schedule ID plus Temporal's timestamp suffix.
const ScheduledJobSchedulePrefix = "scheduled-job:"

// Schedule policies of scheduled jobs. Skip: a job whose previous run is
// still going does not start a second one beside it (its targets would
// get the same work twice). The catch-up window lets a fire missed while
// the Engine or Temporal was down run when they return, if that is within
// 15 minutes; older misses are dropped rather than replayed in a burst.
const (
	jobScheduleOverlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
	JobCatchupWindow   = 15 * time.Minute
	// jobFireTimeout bounds one fire (its run included), so a stuck run
	// cannot keep its schedule skipping for ever.
	jobFireTimeout = 25 * time.Hour
	// memoFingerprint is the action memo key holding a hash of what Cairn
	// controls, so reconcile can tell drift without parsing specs back.
	memoFingerprint = "cairn_fingerprint"
)

// JobScheduler mirrors scheduled jobs as Temporal Schedules
// (scheduledjobs.Schedules) and reconciles them from PostgreSQL.
type JobScheduler struct {
	Client client.Client
	// TaskQueue runs the fire workflows (the Engine queue).
	TaskQueue string
	// Prefix is ScheduledJobSchedulePrefix unless tests that share one
	// Temporal server give each database its own.
	Prefix string
	// Data reads a described schedule's memo: the Client's data converter,
	// which seals payloads (nil: the SDK's default).
	Data converter.DataConverter
}

func (s JobScheduler) prefix() string { return cmp.Or(s.Prefix, ScheduledJobSchedulePrefix) }

// ScheduleID names a job's schedule.
func (s JobScheduler) ScheduleID(id int64) string { return s.prefix() + strconv.FormatInt(id, 10) }

// Apply makes a job's schedule match it.
func (s JobScheduler) Apply(ctx context.Context, job scheduledjobs.Job) error {
	if !job.Schedule.Fires() {
		return s.Remove(ctx, job.ID)
	}
	want, err := s.schedule(job)
	if err != nil {
		return err
	}
	id := s.ScheduleID(job.ID)
	h := s.Client.ScheduleClient().GetHandle(ctx, id)
	desc, err := h.Describe(ctx)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		_, err = s.Client.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID: id, Spec: *want.Spec, Action: want.Action, Overlap: want.Policy.Overlap,
			CatchupWindow: want.Policy.CatchupWindow, Paused: want.State.Paused, Note: want.State.Note,
		})
		if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
			// Another replica created it a moment ago: check it again.
			return s.Apply(ctx, job)
		}
		return err
	}
	if err != nil {
		return err
	}
	if fingerprintOf(desc.Schedule, s.Data) != fingerprint(job, s.TaskQueue) {
		err := h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			sch.Spec, sch.Action, sch.Policy, sch.State = want.Spec, want.Action, want.Policy, want.State
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		}})
		return err
	}
	paused := desc.Schedule.State != nil && desc.Schedule.State.Paused
	switch {
	case paused && job.Enabled:
		return h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "enabled in Cairn"})
	case !paused && !job.Enabled:
		return h.Pause(ctx, client.SchedulePauseOptions{Note: pausedNote})
	}
	return nil
}

const pausedNote = "disabled in Cairn"

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
func (s JobScheduler) Start(ctx context.Context, job scheduledjobs.Job, runID, actor string) error {
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       s.ScheduleID(job.ID) + ":rerun:" + runID,
		TaskQueue:                s.queue(),
		WorkflowExecutionTimeout: jobFireTimeout,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    temporal.NewSearchAttributes(jobKindAttr(job)),
	}, ScheduledJobFire, ScheduledJobFireInput{JobID: job.ID, RunID: runID, Trigger: TriggerRerun, Actor: actor})
	return err
}

func (s JobScheduler) queue() string { return cmp.Or(s.TaskQueue, EngineTaskQueue) }

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
func (s JobScheduler) schedule(job scheduledjobs.Job) (client.Schedule, error) {
	spec := client.ScheduleSpec{}
	switch job.Schedule.Type {
	case scheduledjobs.ScheduleCron:
		spec.CronExpressions = []string{job.Schedule.Expression}
		spec.TimeZoneName = job.Schedule.Timezone
	case scheduledjobs.ScheduleInterval:
		spec.Intervals = []client.ScheduleIntervalSpec{{Every: time.Duration(job.Schedule.EverySeconds) * time.Second}}
	case scheduledjobs.ScheduleOnce:
		if job.Schedule.At == nil {
			return client.Schedule{}, fmt.Errorf("once schedule without a time")
		}
		at := job.Schedule.At.UTC()
		r := func(v int) []client.ScheduleRange { return []client.ScheduleRange{{Start: v}} }
		spec.Calendars = []client.ScheduleCalendarSpec{{Second: r(at.Second()), Minute: r(at.Minute()), Hour: r(at.Hour()),
			DayOfMonth: r(at.Day()), Month: r(int(at.Month())), Year: r(at.Year()), DayOfWeek: []client.ScheduleRange{{Start: 0, End: 6}}}}
		spec.TimeZoneName = "UTC"
	default:
		return client.Schedule{}, fmt.Errorf("schedule type %q does not fire", job.Schedule.Type)
	}
	state := &client.ScheduleState{}
	if !job.Enabled {
		state.Paused, state.Note = true, pausedNote
	}
	return client.Schedule{
		Spec: &spec,
		Action: &client.ScheduleWorkflowAction{
			ID:                       s.ScheduleID(job.ID),
			Workflow:                 ScheduledJobFire,
			Args:                     []any{ScheduledJobFireInput{JobID: job.ID}},
			TaskQueue:                s.queue(),
			WorkflowExecutionTimeout: jobFireTimeout,
			Memo:                     map[string]any{memoFingerprint: fingerprint(job, s.queue())},
			TypedSearchAttributes:    temporal.NewSearchAttributes(jobKindAttr(job)),
		},
		Policy: &client.SchedulePolicies{Overlap: jobScheduleOverlap, CatchupWindow: JobCatchupWindow},
		State:  state,
	}, nil
}

func jobKindAttr(job scheduledjobs.Job) temporal.SearchAttributeUpdate {
	return temporal.NewSearchAttributeKeyKeyword(SearchAttrJobKind).ValueSet("scheduled_job_" + job.Kind)
}

// fingerprint hashes what Cairn controls of a job's schedule besides its
// paused state (which Apply compares on its own).
func fingerprint(job scheduledjobs.Job, queue string) string {
	raw, _ := json.Marshal(struct {
		V        int
		Schedule scheduledjobs.Schedule
		Queue    string
		Overlap  enumspb.ScheduleOverlapPolicy
		Catchup  time.Duration
		Timeout  time.Duration
	}{1, job.Schedule, cmp.Or(queue, EngineTaskQueue), jobScheduleOverlap, JobCatchupWindow, jobFireTimeout})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

// fingerprintOf reads the fingerprint of a described schedule ("" when
// it has none: it was not made by this code).
func fingerprintOf(sch client.Schedule, dc converter.DataConverter) string {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	act, ok := sch.Action.(*client.ScheduleWorkflowAction)
	if !ok || act.Workflow != "ScheduledJobFire" {
		return ""
	}
	p, ok := act.Memo[memoFingerprint].(*commonpb.Payload)
	var fp string
	if !ok || dc.FromPayload(p, &fp) != nil {
		return ""
	}
	return fp
}
