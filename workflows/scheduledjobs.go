package workflows

import (
	"slices"
	"time"

	"github.com/cairn-rmm/cairn"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// Run triggers of a fire.
const (
	TriggerSchedule = scheduledjobs.TriggerSchedule
	TriggerRerun    = scheduledjobs.TriggerRerun
)

// searchAttrScheduledStart is set by Temporal on every workflow a
// schedule starts: the fire time the schedule meant (not when the start
// happened, which may be later after an outage).
const searchAttrScheduledStart = "TemporalScheduledStartTime"

// ScheduledJobFireInput names the job; a rerun also carries the run ID
// the operator was answered with, its trigger and actor.
type ScheduledJobFireInput struct {
	JobID   int64
	RunID   cairn.RunID
	Trigger string
	Actor   string
	// ScheduledFor names the fire time when the fire is started by hand
	// (an SRE re-driving a missed fire from the Temporal UI); a schedule's
	// fire leaves it empty and its time comes from Temporal.
	ScheduledFor *time.Time
}

// ScheduledJobFireResult is what a fire did.
type ScheduledJobFireResult struct {
	RunID cairn.RunID
	Skip  string
}

// SlotLease bounds how long a lane slot outlives a holder that died.
const SlotLease = 25 * time.Hour

// ScheduledJobFire is one fire of a scheduled job, started by its
// Temporal Schedule (or by a rerun). It creates the run keyed by the fire
// time, so a fire retried, restarted or started twice makes one run;
// takes a slot of each target site's scheduled lane; runs the job; and
// frees the slots whatever happened.
func ScheduledJobFire(ctx workflow.Context, in ScheduledJobFireInput) (ScheduledJobFireResult, error) {
	act := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{"NotWired"}},
	})
	var a *activities.ScheduledJobs
	fire := activities.FireInput{JobID: in.JobID, RunID: in.RunID, Trigger: in.Trigger, Actor: in.Actor}
	if in.RunID == "" {
		at := scheduledTime(ctx)
		if in.ScheduledFor != nil {
			at = in.ScheduledFor.UTC()
		}
		fire.ScheduledFor, fire.Trigger = &at, TriggerSchedule
	}
	var plan scheduledjobs.FirePlan
	if err := workflow.ExecuteActivity(act, a.PrepareFire, fire).Get(ctx, &plan); err != nil {
		return ScheduledJobFireResult{}, err
	}
	if plan.Skip != "" {
		return ScheduledJobFireResult{Skip: plan.Skip}, nil
	}
	// The holder is this fire, not its run: a duplicate fire of the same
	// run must not free the slot of the one doing the work.
	holder := workflow.GetInfo(ctx).WorkflowExecution.ID
	defer func() {
		// Released on a disconnected context so a canceled fire frees its
		// slots too.
		rctx, _ := workflow.NewDisconnectedContext(act)
		_ = workflow.ExecuteActivity(rctx, a.ReleaseSlots, holder).Get(rctx, nil)
	}()
	if plan.Kind == scheduledjobs.KindAgentMaintenance {
		if err := acquireSlots(ctx, plan.SiteIDs, holder, scheduledjobs.SlotAgentMaintenance); err != nil {
			return ScheduledJobFireResult{RunID: plan.RunID}, err
		}
		fire.RunID = plan.RunID
		err := runAgentMaintenance(ctx, fire)
		return ScheduledJobFireResult{RunID: plan.RunID}, err
	}
	if plan.Kind == scheduledjobs.KindPatchInstall {
		if err := acquireSlots(ctx, plan.SiteIDs, holder, scheduledjobs.SlotPatchInstall); err != nil {
			return ScheduledJobFireResult{RunID: plan.RunID}, err
		}
		fire.RunID = plan.RunID
		err := runPatchInstallJob(ctx, fire)
		return ScheduledJobFireResult{RunID: plan.RunID}, err
	}
	if err := acquireSlots(ctx, plan.SiteIDs, holder, scheduledjobs.SlotScheduledJob); err != nil {
		return ScheduledJobFireResult{RunID: plan.RunID}, err
	}
	err := runJob(ctx, plan)
	return ScheduledJobFireResult{RunID: plan.RunID}, err
}

// acquireSlots takes one slot per site in ascending site order (so two
// items needing the same sites never hold one each and wait for the
// other), waiting while a lane is full.
func acquireSlots(ctx workflow.Context, sites []int64, holder, kind string) error {
	wait := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: SlotLease,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 1.5, MaximumInterval: 15 * time.Second},
	})
	var a *activities.ScheduledJobs
	sorted := slices.Clone(sites)
	slices.Sort(sorted)
	for _, site := range sorted {
		in := activities.SlotInput{SiteID: cairn.SiteID(site), Holder: holder, Kind: kind, Lease: SlotLease}
		if err := workflow.ExecuteActivity(wait, a.AcquireSlot, in).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// scheduledTime is the fire time of a workflow a schedule started, else
// its start time.
func scheduledTime(ctx workflow.Context) time.Time {
	key := temporal.NewSearchAttributeKeyTime(searchAttrScheduledStart)
	if at, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(key); ok && !at.IsZero() {
		return at.UTC()
	}
	return workflow.GetInfo(ctx).WorkflowStartTime.UTC()
}

// HoldSiteSlots takes a slot of each site's scheduled lane for holder
// (waiting while a lane is full) and returns the release to defer: what
// agent-maintenance items and other bulk work call around their work so
// it counts against the site worker's capacity (SPEC "Limits").
func HoldSiteSlots(ctx workflow.Context, sites []int64, holder, kind string) (release func(), err error) {
	release = func() {
		act := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute}})
		rctx, _ := workflow.NewDisconnectedContext(act)
		var a *activities.ScheduledJobs
		_ = workflow.ExecuteActivity(rctx, a.ReleaseSlots, holder).Get(rctx, nil)
	}
	if err := acquireSlots(ctx, sites, holder, kind); err != nil {
		release()
		return func() {}, err
	}
	return release, nil
}
