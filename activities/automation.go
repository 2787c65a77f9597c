package activities

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// JobRuns executes job runs (workflows.JobRun): claiming pending results,
// sending each device its signed script through the command path, and
// recording outcomes. Only SendScript is a real activity (on the device's
// site queue, where the agent's socket is); the rest are local database
// writes of the workflow's process.
type JobRuns struct {
	Runs    *automation.Service
	Gateway *agentgateway.Hub
	Devices *devices.Service
}

// NextInput asks for the next pending results of a run.
type NextInput struct {
	RunID cairn.RunID
	Max   int
}

// NextItems returns up to Max pending results (local activity).
func (a *JobRuns) NextItems(ctx context.Context, in NextInput) (automation.Batch, error) {
	b, err := a.Runs.NextItems(ctx, in.RunID, in.Max)
	return b, ApplicationError(err)
}

// SendScriptInput is one device's execution.
type SendScriptInput struct {
	RunID       cairn.RunID
	GUID        cairn.DeviceGUID
	OperationID cairn.OperationID
}

// SendScript marks the result running, opens its activity row and writes
// the signed payload to the agent's socket; the reply completes the
// activity by its task token (like SendToAgent). Dispatch checks trust
// right before sending: a device quarantined since the run was created
// gets nothing.
func (a *JobRuns) SendScript(ctx context.Context, in SendScriptInput) (agentgateway.Reply, error) {
	signed, err := a.Runs.Dispatch(ctx, in.RunID, in.GUID, in.OperationID)
	if err != nil {
		return agentgateway.Reply{}, ApplicationError(err)
	}
	info := activity.GetInfo(ctx)
	expires := info.ScheduledTime.Add(24 * time.Hour)
	if !info.Deadline.IsZero() {
		expires = info.Deadline.Add(time.Minute)
	}
	err = a.Gateway.Dispatch(ctx, agentgateway.Request{ID: uuid.NewString(), OperationID: in.OperationID, GUID: in.GUID,
		Type: proto.EventQuickJobRun, Payload: signed, TaskToken: info.TaskToken, ExpiresAt: expires})
	if err != nil {
		if cairn.IsCode(err, cairn.ECodeAgentSocketMissing) {
			return agentgateway.Reply{}, temporal.NewApplicationError(err.Error(), cairn.ECodeAgentSocketMissing)
		}
		return agentgateway.Reply{}, ApplicationError(err)
	}
	return agentgateway.Reply{}, activity.ErrResultPending
}

// RecordOutcomes stores how devices' executions ended (local activity).
// A retry after a partial failure records the rest: Finish ignores a
// result that is finished already.
func (a *JobRuns) RecordOutcomes(ctx context.Context, outs []automation.Outcome) error {
	for _, o := range outs {
		if err := a.Runs.Finish(ctx, o); err != nil {
			return ApplicationError(err)
		}
	}
	return nil
}

// FinishRun closes the run once nothing is pending or running (local).
func (a *JobRuns) FinishRun(ctx context.Context, runID cairn.RunID) error {
	return ApplicationError(a.Runs.FinishRun(ctx, runID))
}
