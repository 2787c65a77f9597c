package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// ScheduledJobs prepares the fires of scheduled jobs and hands out the
// site-worker lane slots their runs hold.
type ScheduledJobs struct {
	Jobs  *scheduledjobs.Service
	Slots *scheduledjobs.Slots
	// Runs creates job runs (nil: this build has no run creator).
	Runs scheduledjobs.RunCreator
}

// FireInput is one fire to prepare.
type FireInput struct {
	JobID        int64
	RunID        string
	Trigger      string
	Actor        string
	ScheduledFor *time.Time
}

// PrepareFire resolves the job's targets and creates its run (once per
// fire time, however often it is retried).
func (a *ScheduledJobs) PrepareFire(ctx context.Context, in FireInput) (scheduledjobs.FirePlan, error) {
	plan, err := a.Jobs.Prepare(ctx, a.Runs, in.JobID, in.RunID, in.Trigger, in.Actor, in.ScheduledFor)
	return plan, ApplicationError(err)
}

// SlotInput asks for one lane slot.
type SlotInput struct {
	SiteID int64
	Holder string
	Kind   string
	Lease  time.Duration
}

// ErrTypeLaneFull: the site's scheduled lane is full; the workflow's
// retry policy waits and asks again.
const ErrTypeLaneFull = "lane_full"

// AcquireSlot takes a slot of the site's scheduled lane, or fails with a
// retryable lane_full error while the lane is full.
func (a *ScheduledJobs) AcquireSlot(ctx context.Context, in SlotInput) error {
	ok, err := a.Slots.Acquire(ctx, in.SiteID, in.Holder, in.Kind, in.Lease)
	if err != nil {
		return err
	}
	if !ok {
		return temporal.NewApplicationError("the site's scheduled lane is full", ErrTypeLaneFull)
	}
	return nil
}

// ReleaseSlots frees every slot of holder.
func (a *ScheduledJobs) ReleaseSlots(ctx context.Context, holder string) error {
	return a.Slots.Release(ctx, holder)
}
