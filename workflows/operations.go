package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// OperationWorkflowID names one operation on one device.
func OperationWorkflowID(guid cairn.DeviceGUID, operationID cairn.OperationID) string {
	return "device-op:" + string(guid) + ":" + string(operationID)
}

// Operation timing. An operation waits for its agent at most Timeout
// (default DefaultOperationTimeout); the holder of the socket heartbeats
// it every agentgateway.HeartbeatInterval, so a holder that dies is noticed
// after operationHeartbeat and the request goes out again wherever the
// agent reconnects.
const (
	DefaultOperationTimeout = 90 * time.Second
	operationHeartbeat      = 3 * agentgateway.HeartbeatInterval
)

// ECodeOperationTimedOut: the agent did not answer in time.
const ECodeOperationTimedOut = "operation_timed_out"

// OperationInput is one operation on one device.
type OperationInput struct {
	OperationID cairn.OperationID
	Target      devices.OperationTarget
	// Type is the spec's event name (proto.Event*); Payload its body.
	Type    string
	Payload json.RawMessage
	// Kind is the activity history's kind, e.g. "service_restart";
	// Summary what the operator asked for, e.g. "Restart nginx".
	Kind    string
	Summary string
	Actor   string
	Meta    map[string]any
	Timeout time.Duration
	// Grant authorises exactly this request to this device (internal/
	// grants); OperationRunner signs it where the operator was authorised.
	Grant string
}

// QueryOperationStatus is the Query that reads a running operation's
// phase (GET /api/operations/<operation_id>): the workflow's own answer
// while it runs, before anything is written to PostgreSQL.
const QueryOperationStatus = "operation_status"

// Phases of a DeviceOperation, as QueryOperationStatus answers them.
const (
	OperationPhaseRecording = "recording"
	OperationPhaseSending   = "waiting_for_agent"
	OperationPhaseApplying  = "applying"
	OperationPhaseFinishing = "finishing"
	OperationPhaseDone      = "done"
)

// OperationProgress is what QueryOperationStatus answers.
type OperationProgress struct {
	Phase string `json:"phase"`
	// Error is the failure's code once the operation failed.
	Error string `json:"error,omitempty"`
}

// OperationMeta is the activity metadata an operation is recorded with:
// the workflow's BeginOperation and the API that records the operation
// before starting it (so its status is readable from the first moment)
// write the same row, keyed by the operation ID.
func OperationMeta(in OperationInput) map[string]any {
	meta := map[string]any{"operation_id": in.OperationID, "type": in.Type}
	for k, v := range in.Meta {
		meta[k] = v
	}
	return meta
}

// OperationResult is the agent's answer and what it changed.
type OperationResult struct {
	Payload    json.RawMessage
	Summary    string
	ActivityID int64
}

// DeviceOperation sends one request to a device's agent through the
// command path and records it: the activity row opens as running, the
// agent's answer is applied to the stored inventory, and the row closes
// with the outcome and duration whatever happened. A failure comes back as
// a non-retryable application error whose type is a stable code.
func DeviceOperation(ctx workflow.Context, in OperationInput) (OperationResult, error) {
	started := workflow.Now(ctx)
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = DefaultOperationTimeout
	}
	// Recording and applying are local activities; only the request to
	// the agent is a real activity (withRecording, withSending).
	local := withRecording(ctx)
	var ops *activities.Operations
	var cmds *activities.AgentCommands

	progress := OperationProgress{Phase: OperationPhaseRecording}
	// A Query handler adds no command: histories saved before it replay.
	if err := workflow.SetQueryHandler(ctx, QueryOperationStatus, func() (OperationProgress, error) { return progress, nil }); err != nil {
		return OperationResult{}, err
	}
	meta := OperationMeta(in)
	var result OperationResult
	err := workflow.ExecuteLocalActivity(local, ops.BeginOperation, activities.OperationRecord{
		Target: in.Target, Kind: in.Kind, Summary: in.Summary, Actor: in.Actor, Meta: meta,
	}).Get(ctx, &result.ActivityID)
	if err != nil {
		return result, err
	}

	progress.Phase = OperationPhaseSending
	send := withSending(ctx, timeout, "")
	var reply agentgateway.Reply
	opErr := workflow.ExecuteActivity(send, cmds.SendToAgent, activities.CommandInput{
		OperationID: in.OperationID, GUID: in.Target.GUID, Type: in.Type, Payload: in.Payload, Grant: in.Grant,
	}).Get(ctx, &reply)
	if opErr == nil {
		progress.Phase = OperationPhaseApplying
		result.Payload = reply.Payload
		opErr = workflow.ExecuteLocalActivity(local, ops.ApplyAgentAnswer, activities.ApplyInput{
			GUID: in.Target.GUID, Type: in.Type, Payload: reply.Payload,
		}).Get(ctx, &result.Summary)
	}

	code, message := "", ""
	status, summary := devices.ActivityCompleted, in.Summary
	if result.Summary != "" {
		summary += ": " + result.Summary
	}
	if opErr != nil {
		code, message = operationFailure(opErr, timeout)
		status, summary = devices.ActivityFailed, in.Summary+": "+message
		meta["error"] = code
	}
	progress.Phase, progress.Error = OperationPhaseFinishing, code
	meta["duration_ms"] = workflow.Now(ctx).Sub(started).Milliseconds()
	finishErr := workflow.ExecuteLocalActivity(local, ops.FinishOperation, activities.FinishInput{
		ActivityID: result.ActivityID, Status: status, Summary: summary, Meta: meta,
	}).Get(ctx, nil)
	progress.Phase = OperationPhaseDone
	if opErr != nil {
		return result, temporal.NewNonRetryableApplicationError(message, code, nil)
	}
	return result, finishErr
}

// operationFailure turns what ended an operation into a stable code and a
// message for operators.
func operationFailure(err error, timeout time.Duration) (code, message string) {
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		message = fmt.Sprintf("the agent did not answer within %s", timeout)
		var last *temporal.ApplicationError
		if errors.As(timeoutErr.Unwrap(), &last) && last.Type() == cairn.ECodeAgentSocketMissing {
			message += " (it was not connected)"
		}
		return ECodeOperationTimedOut, message
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() != "" {
		return app.Type(), app.Message()
	}
	return cairn.ECodeInternal, err.Error()
}
