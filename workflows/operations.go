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

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
)

// OperationWorkflowID names one operation on one device.
func OperationWorkflowID(guid, operationID string) string {
	return "device-op:" + guid + ":" + operationID
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
	OperationID string
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
	// Recording and applying are short database writes in the process
	// running the workflow: local activities, which cost no task-queue
	// round trip and a fraction of the history events. Only the request
	// to the agent is a real activity, since another process completes it.
	local := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	var ops *activities.Operations
	var cmds *activities.AgentCommands

	meta := map[string]any{"operation_id": in.OperationID, "type": in.Type}
	for k, v := range in.Meta {
		meta[k] = v
	}
	var result OperationResult
	err := workflow.ExecuteLocalActivity(local, ops.BeginOperation, activities.OperationRecord{
		Target: in.Target, Kind: in.Kind, Summary: in.Summary, Actor: in.Actor, Meta: meta,
	}).Get(ctx, &result.ActivityID)
	if err != nil {
		return result, err
	}

	send := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: timeout,
		StartToCloseTimeout:    timeout,
		HeartbeatTimeout:       operationHeartbeat,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Second},
	})
	var reply agentgateway.Reply
	opErr := workflow.ExecuteActivity(send, cmds.SendToAgent, activities.CommandInput{
		OperationID: in.OperationID, GUID: in.Target.GUID, Type: in.Type, Payload: in.Payload, Grant: in.Grant,
	}).Get(ctx, &reply)
	if opErr == nil {
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
	meta["duration_ms"] = workflow.Now(ctx).Sub(started).Milliseconds()
	finishErr := workflow.ExecuteLocalActivity(local, ops.FinishOperation, activities.FinishInput{
		ActivityID: result.ActivityID, Status: status, Summary: summary, Meta: meta,
	}).Get(ctx, nil)
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

// Granter signs what an operation may send (grants.Service).
type Granter interface {
	Sign(ctx context.Context, op grants.Operation, ttl time.Duration) (string, error)
}

// OperationRunner starts operations and waits for their outcome. It runs
// where the operator was authorised (the API), so it grants the request:
// a DeviceOperation started any other way reaches no agent.
type OperationRunner struct {
	Client client.Client
	Grants Granter
}

// Run starts in on the device's site queue and waits until it ends or ctx
// does; the operation goes on either way (it is recorded in the device's
// activity). A failure is returned as a *cairn.Error with the operation's
// code.
func (r OperationRunner) Run(ctx context.Context, in OperationInput) (OperationResult, error) {
	run, err := r.Start(ctx, in)
	if err != nil {
		return OperationResult{}, err
	}
	var res OperationResult
	err = run.Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil || isOverload(err) {
		return res, cairn.Errorf(cairn.ECodeUnavailable, "the operation is still running; its outcome will be in the device's activity")
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() != "" {
		return res, cairn.Errorf(app.Type(), "%s", app.Message())
	}
	return res, err
}

// Start starts in without waiting for its outcome (the workflow records
// it in the device's activity either way): for requests that follow
// another action, such as the software refresh after an icon override.
func (r OperationRunner) Start(ctx context.Context, in OperationInput) (client.WorkflowRun, error) {
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = DefaultOperationTimeout
	}
	life := timeout + 15*time.Minute
	grant, err := r.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: in.OperationID, Type: in.Type,
		Payload: in.Payload, Actor: in.Actor}, life)
	if err != nil {
		return nil, err
	}
	in.Grant = grant
	run, err := r.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       OperationWorkflowID(in.Target.GUID, in.OperationID),
		TaskQueue:                SiteTaskQueue(in.Target.SiteSlug),
		WorkflowExecutionTimeout: life,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttrDeviceGUID).ValueSet(in.Target.GUID),
			temporal.NewSearchAttributeKeyKeyword(SearchAttrSiteSlug).ValueSet(in.Target.SiteSlug),
			temporal.NewSearchAttributeKeyKeyword(SearchAttrJobKind).ValueSet(in.Kind),
		),
	}, DeviceOperation, in)
	if err != nil {
		if ctx.Err() == nil && !isOverload(err) {
			return nil, err
		}
		return nil, tooBusy("operation")
	}
	return run, nil
}

// busyRetryAfter is the Retry-After of a "too busy" answer: what the API
// says for temporal_unavailable too, long enough for a stall to pass.
const busyRetryAfter = 5

// tooBusy answers a start that Temporal did not take or confirm in time;
// the client may try again after Retry-After (starts are idempotent by
// workflow ID).
func tooBusy(what string) error {
	e := cairn.Errorf(cairn.ECodeUnavailable, "the Engine is too busy to start the %s now; try again", what)
	e.RetryAfterSeconds = busyRetryAfter
	return e
}

// isOverload reports a Temporal call that ran out of time or capacity
// (the service is busy), which the caller may retry: not a fault.
func isOverload(err error) bool {
	var exhausted *serviceerror.ResourceExhausted
	var deadline *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &exhausted) || errors.As(err, &deadline)
}
