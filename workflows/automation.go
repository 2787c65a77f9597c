package workflows

import (
	"slices"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// Job-run fan-out defaults. A batch is what one workflow run handles
// before continuing as new, so a run to 10,000 devices is 20 histories of
// a few thousand events, never one giant one.
const (
	DefaultJobRunConcurrency = 100
	DefaultJobRunBatch       = 500
	// jobRunGrace is what the agent gets beyond the script's timeout to
	// be reached and to answer (a reconnecting agent, a slow kill).
	jobRunGrace = 2 * time.Minute
)

// JobRunInput names the run to execute. MaxConcurrent bounds the devices
// of one site executing at once; Batch the results per workflow run;
// TimeoutSeconds overrides the run's script timeout (0: the run's).
type JobRunInput struct {
	RunID          cairn.RunID
	MaxConcurrent  int
	Batch          int
	TimeoutSeconds int
	// LaneHeld says the caller holds the run's site-worker slots already
	// (a scheduled job's fire): a playbook batch takes none of its own.
	LaneHeld bool
}

// JobRun executes every pending result of a job run through the command
// path: for each device one SendScript activity on the device's site queue
// (which opens the activity row and sends the signed payload), then the
// outcome recorded by a local activity. Concurrency is bounded per site;
// after each batch the workflow continues as new until nothing is
// pending, then closes the run.
//
// Measured against a DeviceOperation child workflow per device: the child
// adds its own history (about 11 events) plus 3 events in the parent per
// device and a workflow task per child, for the same one activity; the
// direct activity costs 3 events plus one local-activity marker.
func JobRun(ctx workflow.Context, in JobRunInput) error {
	maxConc := in.MaxConcurrent
	if maxConc <= 0 {
		maxConc = DefaultJobRunConcurrency
	}
	batch := in.Batch
	if batch <= 0 {
		batch = DefaultJobRunBatch
	}
	local := withRecording(ctx)
	var runs *activities.JobRuns

	var next automation.Batch
	if err := workflow.ExecuteLocalActivity(local, runs.NextItems, activities.NextInput{RunID: in.RunID, Max: batch}).Get(ctx, &next); err != nil {
		return err
	}
	items := next.Items
	if next.Ansible && !in.LaneHeld && len(items) > 0 {
		// SPEC "Limits": a playbook run holds a site-worker slot of each
		// site of its batch while the batch runs: a shared batch one slot
		// per site, a one-target run one slot. Scripts take none (quick
		// runs are interactive); a scheduled playbook's fire holds its
		// sites' slots itself (LaneHeld).
		var sites []int64
		for _, it := range items {
			if !slices.Contains(sites, int64(it.SiteID)) {
				sites = append(sites, int64(it.SiteID))
			}
		}
		release, err := HoldSiteSlots(ctx, sites, workflow.GetInfo(ctx).WorkflowExecution.ID, scheduledjobs.SlotAnsible)
		if err != nil {
			return err
		}
		defer release()
	}
	seconds := next.TimeoutSeconds
	if in.TimeoutSeconds > 0 {
		seconds = in.TimeoutSeconds
	}
	timeout := time.Duration(max(seconds, 1))*time.Second + jobRunGrace
	// Outcomes are recorded in batches: one local activity takes every
	// outcome that arrived while the previous one ran, so a fan-out costs
	// a handful of markers and workflow tasks rather than one per device.
	inflight := map[string]int{}
	done, recorded := 0, 0
	var outcomes []automation.Outcome
	workflow.Go(ctx, func(gctx workflow.Context) {
		for recorded < len(items) {
			if workflow.Await(gctx, func() bool { return len(outcomes) > 0 }) != nil {
				return
			}
			take := outcomes
			outcomes = nil
			// A failed record is retried by the local activity's policy;
			// if it still fails those results stay running and the run
			// unfinished, which an operator sees, rather than the workflow
			// failing every device.
			_ = workflow.ExecuteLocalActivity(local, runs.RecordOutcomes, take).Get(gctx, nil)
			recorded += len(take)
		}
	})
	for _, it := range items {
		if err := workflow.Await(ctx, func() bool { return inflight[it.SiteSlug] < maxConc }); err != nil {
			return err
		}
		inflight[it.SiteSlug]++
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer func() { inflight[it.SiteSlug]--; done++ }()
			outcomes = append(outcomes, runOnDevice(gctx, in.RunID, it, timeout))
		})
	}
	if err := workflow.Await(ctx, func() bool { return done == len(items) && recorded == len(items) }); err != nil {
		return err
	}
	if len(items) == batch {
		return workflow.NewContinueAsNewError(ctx, JobRun, in)
	}
	return workflow.ExecuteLocalActivity(local, runs.FinishRun, in.RunID).Get(ctx, nil)
}

// runOnDevice sends one device its script and returns the outcome.
func runOnDevice(ctx workflow.Context, runID cairn.RunID, it automation.Item, timeout time.Duration) automation.Outcome {
	var runs *activities.JobRuns
	send := withSending(ctx, timeout, SiteTaskQueue(it.SiteSlug))
	// The operation ID is derived, not random: deterministic on replay and
	// stable across the dispatch's retries (the agent answers a repeat
	// from its cache instead of running the script twice).
	opID := uuid.NewSHA1(uuid.NameSpaceURL, []byte("cairn:job-run:"+string(runID)+":"+string(it.GUID))).String()
	var reply agentgateway.Reply
	err := workflow.ExecuteActivity(send, runs.SendScript, activities.SendScriptInput{RunID: runID, GUID: it.GUID, OperationID: cairn.OperationID(opID)}).Get(ctx, &reply)
	out := automation.Outcome{RunID: runID, GUID: it.GUID, Reply: reply.Payload}
	if err != nil {
		out.Reply = nil
		out.ErrorCode, out.ErrorMessage = operationFailure(err, timeout)
	}
	return out
}
