package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// Agent update names.
const (
	// SignalAgentUpdateProgress tells an update that its agent posted
	// progress; the workflow reads the record (no payload).
	SignalAgentUpdateProgress = "agent-update-progress"
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
func AgentUpdateWorkflowID(guid, operationID string) string {
	return "agent-update:" + guid + ":" + operationID
}

// AgentUpdateInput is one requested update.
type AgentUpdateInput struct {
	OperationID string
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
	RunID      string
	LaneHolder string
	// Grant authorises Payload to the device (internal/grants).
	Grant string
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
	local := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
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
		defer releaseLaneWhenRunEnds(ctx, in.RunID, in.LaneHolder)
		if err := acquireSlots(ctx, []int64{in.Target.SiteID}, in.LaneHolder, scheduledjobs.SlotAgentMaintenance); err != nil {
			return "", err
		}
		started = workflow.Now(ctx)
	}
	if err := workflow.ExecuteLocalActivity(local, rec.BeginAgentUpdate, in.OperationID).Get(ctx, nil); err != nil {
		return "", err
	}

	sendTimeout := DefaultOperationTimeout
	send := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: sendTimeout,
		StartToCloseTimeout:    sendTimeout,
		HeartbeatTimeout:       operationHeartbeat,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Second},
	})
	err := workflow.ExecuteActivity(send, cmds.SendToAgent, activities.CommandInput{
		OperationID: in.OperationID, GUID: in.Target.GUID, Type: proto.EventAgentUpdate, Payload: in.Payload, Grant: in.Grant,
	}).Get(ctx, nil)
	if err != nil {
		code, message := operationFailure(err, sendTimeout)
		return finish(agentupdates.StatusFailed, fmt.Sprintf("the agent did not take the update (%s): %s", code, message))
	}

	progress := workflow.GetSignalChannel(ctx, SignalAgentUpdateProgress)
	for {
		var status string
		if err := workflow.ExecuteLocalActivity(local, rec.AgentUpdateStatus, in.OperationID).Get(ctx, &status); err != nil {
			return "", err
		}
		if agentupdates.Terminal(status) {
			return status, nil
		}
		left := deadline - workflow.Now(ctx).Sub(started)
		if left <= 0 {
			return finish(agentupdates.StatusTimedOut, fmt.Sprintf("the agent did not check in on build %s within %s of the request",
				in.ToBuildID, deadline))
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, min(left, agentUpdateRecheck)), func(workflow.Future) {})
		sel.AddReceive(progress, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			for c.ReceiveAsync(nil) {
			}
		})
		sel.Select(ctx)
		cancel()
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

// AgentUpdateStarter starts update workflows and tells them of progress.
type AgentUpdateStarter struct {
	Client   client.Client
	Deadline time.Duration
	// Grants signs the request: operators' requests are authorised by the
	// API, scheduled ones by the job an admin saved (PostgreSQL).
	Grants Granter
}

// Start starts the update of one device on its site's queue.
func (s AgentUpdateStarter) Start(ctx context.Context, p agentupdates.Planned) error {
	raw, err := json.Marshal(p.Request)
	if err != nil {
		return err
	}
	deadline := s.Deadline
	if deadline <= 0 {
		deadline = DefaultAgentUpdateDeadline
	}
	limit := deadline + 30*time.Minute
	if p.LaneHolder != "" {
		limit += slotLease // it may wait that long for a slot
	}
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: p.Target.GUID, OperationID: p.OperationID, Type: proto.EventAgentUpdate,
		Payload: raw}, limit)
	if err != nil {
		return err
	}
	_, err = s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       AgentUpdateWorkflowID(p.Target.GUID, p.OperationID),
		TaskQueue:                SiteTaskQueue(p.Target.SiteSlug),
		WorkflowExecutionTimeout: limit,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttrDeviceGUID).ValueSet(p.Target.GUID),
			temporal.NewSearchAttributeKeyKeyword(SearchAttrSiteSlug).ValueSet(p.Target.SiteSlug),
			temporal.NewSearchAttributeKeyKeyword(SearchAttrJobKind).ValueSet(JobKindAgentUpdate),
		),
	}, AgentUpdate, AgentUpdateInput{OperationID: p.OperationID, Target: p.Target, ToBuildID: p.Request.BuildID,
		Payload: raw, Deadline: deadline, RunID: p.RunID, LaneHolder: p.LaneHolder, Grant: grant})
	if err != nil && isOverload(err) {
		return tooBusy("update")
	}
	return err
}

// Progress signals the update that its agent posted progress. An update
// that no longer runs (or an hourly one, which has no workflow) is fine.
func (s AgentUpdateStarter) Progress(ctx context.Context, guid, operationID string) error {
	err := s.Client.SignalWorkflow(ctx, AgentUpdateWorkflowID(guid, operationID), "", SignalAgentUpdateProgress, nil)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}
