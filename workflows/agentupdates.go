package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-rmm/cairn"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// Agent update names.
const (
	// SignalAgentUpdateProgress tells an update that its agent posted
	// progress: an AgentUpdateProgress with the status recorded (older
	// Engines sent none, and the workflow read the record).
	SignalAgentUpdateProgress = "agent-update-progress"
	// versionProgressCarriesStatus names the workflow.GetVersion change
	// that took the status from the progress signal.
	versionProgressCarriesStatus = "progress-carries-status"
	// JobKindAgentUpdate is the JobKind search attribute of updates.
	JobKindAgentUpdate = "agent_update"
	// DefaultAgentUpdateDeadline is how long an update may take from the
	// request to the agent's check-in on the new build.
	DefaultAgentUpdateDeadline = 10 * time.Minute
	// agentUpdateRecheck re-reads the record this often, in case a signal
	// was lost (the Engine died between recording progress and signaling).
	agentUpdateRecheck = time.Minute
)

// AgentUpdateWorkflowID names the update of one device's agent.
func AgentUpdateWorkflowID(guid cairn.DeviceGUID, operationID cairn.OperationID) string {
	return "agent-update:" + string(guid) + ":" + string(operationID)
}

// AgentUpdateInput is one requested update.
type AgentUpdateInput struct {
	OperationID cairn.OperationID
	Target      devices.OperationTarget
	ToBuildID   string
	// Payload is the proto.AgentUpdateRequest.
	Payload  json.RawMessage
	Deadline time.Duration
	// RunID and LaneHolder (an operator's request): the update first
	// takes a slot of its site's lane under LaneHolder, shared by the
	// request's updates, and the last of them to end frees it. Empty
	// (a scheduled job's fire holds the slots; histories from before
	// lanes): no slot.
	RunID      cairn.RunID
	LaneHolder string
	// Grant authorises Payload to the device (internal/grants).
	Grant string
}

// AgentUpdateProgress is the progress signal's payload.
type AgentUpdateProgress struct {
	// Status is the update's status as the route recorded it
	// (agentupdates.Status*).
	Status string
}

// AgentUpdate sends agent_update_request through the command path and
// waits until the agent reports the outcome (it checks in on the new
// build, fails or rolls back) or the deadline passes, which ends the
// update as timed_out. It returns the final status.
func AgentUpdate(ctx workflow.Context, in AgentUpdateInput) (string, error) {
	started := workflow.Now(ctx)
	deadline := in.Deadline
	if deadline <= 0 {
		deadline = DefaultAgentUpdateDeadline
	}
	local := withRecording(ctx)
	var rec *activities.AgentUpdates
	var cmds *activities.AgentCommands
	finish := func(status, summary string) (string, error) {
		var final string
		err := workflow.ExecuteLocalActivity(local, rec.FinishAgentUpdate, activities.FinishAgentUpdateInput{
			OperationID: in.OperationID, Status: status, Summary: summary}).Get(ctx, &final)
		return final, err
	}
	if in.LaneHolder != "" {
		// The operation stays queued while the lane is full; its deadline
		// runs from when it has a slot.
		defer releaseLaneWhenRunEnds(ctx, string(in.RunID), in.LaneHolder)
		if err := acquireSlots(ctx, []int64{int64(in.Target.SiteID)}, in.LaneHolder, scheduledjobs.SlotAgentMaintenance); err != nil {
			return "", err
		}
		started = workflow.Now(ctx)
	}
	if err := workflow.ExecuteLocalActivity(local, rec.BeginAgentUpdate, in.OperationID).Get(ctx, nil); err != nil {
		return "", err
	}

	sendTimeout := DefaultOperationTimeout
	send := withSending(ctx, sendTimeout, "")
	err := workflow.ExecuteActivity(send, cmds.SendToAgent, activities.CommandInput{
		OperationID: in.OperationID, GUID: in.Target.GUID, Type: proto.EventAgentUpdate, Payload: in.Payload, Grant: in.Grant,
	}).Get(ctx, nil)
	if err != nil {
		code, message := operationFailure(err, sendTimeout)
		return finish(agentupdates.StatusFailed, fmt.Sprintf("the agent did not take the update (%s): %s", code, message))
	}

	progress := workflow.GetSignalChannel(ctx, SignalAgentUpdateProgress)
	// Version 1 takes the status a progress signal carries as the record's
	// (the route recorded it before signalling) instead of reading it
	// again; updates started before, and signals without a status, read.
	carried := workflow.GetVersion(ctx, versionProgressCarriesStatus, workflow.DefaultVersion, 1) >= 1
	var status string
	read := true
	for {
		if read {
			if err := workflow.ExecuteLocalActivity(local, rec.AgentUpdateStatus, in.OperationID).Get(ctx, &status); err != nil {
				return "", err
			}
		}
		if agentupdates.Terminal(status) {
			return status, nil
		}
		left := deadline - workflow.Now(ctx).Sub(started)
		if left <= 0 {
			return finish(agentupdates.StatusTimedOut, fmt.Sprintf("the agent did not check in on build %s within %s of the request",
				in.ToBuildID, deadline))
		}
		p, signalled := awaitChange[AgentUpdateProgress](ctx, progress, min(left, agentUpdateRecheck))
		read = !carried || !signalled || p.Status == ""
		if !read {
			status = p.Status
		}
	}
}

// releaseLaneWhenRunEnds frees the request's lane slots once no update of
// its run is pending or running: each update checks after its own end,
// so the last one to end (whose outcome is recorded by then) frees them.
func releaseLaneWhenRunEnds(ctx workflow.Context, runID, holder string) {
	rctx, _ := workflow.NewDisconnectedContext(ctx)
	act := workflow.WithActivityOptions(rctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
	var a *activities.ScheduledJobs
	var status string
	if err := workflow.ExecuteActivity(act, a.JobRunStatus, runID).Get(rctx, &status); err != nil || status == "pending" || status == "running" {
		return
	}
	_ = workflow.ExecuteActivity(act, a.ReleaseSlots, holder).Get(rctx, nil)
}
