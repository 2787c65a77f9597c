package workflowclient

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/workflows"
)

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
	// Record, when set, records an operation as running before it is
	// started (so GET /api/operations/<operation_id> finds it from the
	// moment its ID is handed out) and closes the record when the start
	// fails (devices.Service).
	Record OperationRecorder
}

// OperationRecorder records operations in the device's activity.
type OperationRecorder interface {
	OperationAccepted(ctx context.Context, t devices.OperationTarget, operationID cairn.OperationID, kind, summary, actor string, meta map[string]any) (int64, error)
	OperationFinished(ctx context.Context, id int64, status, summary string, meta map[string]any) error
}

// Run starts in on the device's site queue and waits until it ends or ctx
// does; the operation goes on either way (it is recorded in the device's
// activity). A failure is returned as a *cairn.Error with the operation's
// code.
func (r OperationRunner) Run(ctx context.Context, in workflows.OperationInput) (workflows.OperationResult, error) {
	res, err := r.RunWithin(ctx, in, -1)
	if _, pending := errors.AsType[*OperationPending](err); pending {
		return res, cairn.Errorf(cairn.ECodeUnavailable, "the operation is still running; its outcome will be in the device's activity")
	}
	return res, err
}

// OperationsWaiting bounds the operations a process waits on for their
// outcome at once (RunWithin). With StartsInFlight it keeps a fleet's
// worth of requests sent together from becoming as many long polls on
// Temporal: the embedded server on one core answered 503 or stalled
// heartbeats under a thousand (docs/benchmarks.md "One operation to
// 1,000 agents").
const OperationsWaiting = 64

// opWaiters holds a token per operation waited on (OperationsWaiting).
var opWaiters = make(chan struct{}, OperationsWaiting)

// OperationPending is RunWithin's answer for an operation that was
// started and has not ended within the wait: the API answers it 202 with
// the operation's URL (GET /api/operations/<operation_id>).
type OperationPending struct {
	OperationID cairn.OperationID
}

func (p *OperationPending) Error() string {
	return "operation " + string(p.OperationID) + " is still running"
}

// RunWithin is Run that waits at most wait (negative: until ctx ends).
// Once the operation is started, an outcome it cannot wait for (the wait
// or ctx ran out, Temporal went away while it waited) is an
// *OperationPending, never a failure: the operation goes on and its
// status is read with Progress and the device's activity row.
func (r OperationRunner) RunWithin(ctx context.Context, in workflows.OperationInput, wait time.Duration) (workflows.OperationResult, error) {
	var recorded int64
	if r.Record != nil {
		id, err := r.Record.OperationAccepted(ctx, in.Target, in.OperationID, in.Kind, in.Summary, in.Actor, workflows.OperationMeta(in))
		if err != nil {
			return workflows.OperationResult{}, err
		}
		recorded = id
	}
	run, err := r.Start(ctx, in)
	if err != nil {
		if recorded != 0 {
			meta := workflows.OperationMeta(in)
			meta["error"] = cairn.ErrorCode(err)
			if u := Unavailable(err); u != nil {
				meta["error"] = u.Code
			}
			// The request fails whatever this write does; its own error
			// would hide why.
			_ = r.Record.OperationFinished(context.WithoutCancel(ctx), recorded, devices.ActivityFailed,
				in.Summary+": the operation could not be started", meta)
		}
		return workflows.OperationResult{}, err
	}
	wctx := ctx
	if wait >= 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var res workflows.OperationResult
	// A bounded number of requests wait on Temporal for their outcome at
	// once (each wait is a long poll on the workflow's history); the rest
	// wait for a turn, and one whose wait runs out first is answered as
	// still running, like any operation that outlives its wait.
	select {
	case opWaiters <- struct{}{}:
		defer func() { <-opWaiters }()
	case <-wctx.Done():
		return res, &OperationPending{OperationID: in.OperationID}
	}
	err = run.Get(wctx, &res)
	if err == nil {
		return res, nil
	}
	if wctx.Err() != nil || Unavailable(err) != nil {
		return res, &OperationPending{OperationID: in.OperationID}
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() != "" {
		return res, cairn.Errorf(app.Type(), "%s", app.Message())
	}
	return res, err
}

// Progress asks a device's operation workflow where it is
// (workflows.QueryOperationStatus).
func (r OperationRunner) Progress(ctx context.Context, guid cairn.DeviceGUID, id cairn.OperationID) (workflows.OperationProgress, error) {
	var p workflows.OperationProgress
	v, err := r.Client.QueryWorkflow(ctx, workflows.OperationWorkflowID(guid, id), "", workflows.QueryOperationStatus)
	if err != nil {
		return p, err
	}
	return p, v.Get(&p)
}

// Start starts in without waiting for its outcome (the workflow records
// it in the device's activity either way): for requests that follow
// another action, such as the software refresh after an icon override.
func (r OperationRunner) Start(ctx context.Context, in workflows.OperationInput) (client.WorkflowRun, error) {
	timeout := in.Timeout
	if timeout <= 0 {
		timeout = workflows.DefaultOperationTimeout
	}
	life := timeout + 15*time.Minute
	grant, err := r.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: in.OperationID, Type: in.Type,
		Payload: in.Payload, Actor: in.Actor}, life)
	if err != nil {
		return nil, err
	}
	in.Grant = grant
	return Start(ctx, r.Client, client.StartWorkflowOptions{
		ID:                       workflows.OperationWorkflowID(in.Target.GUID, in.OperationID),
		TaskQueue:                workflows.SiteTaskQueue(in.Target.SiteSlug),
		WorkflowExecutionTimeout: life,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    deviceAttrs(string(in.Target.GUID), in.Target.SiteSlug, in.Kind),
	}, workflows.DeviceOperation, in)
}

// deviceAttrs are the search attributes of work on one device.
func deviceAttrs(guid, siteSlug, jobKind string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrDeviceGUID).ValueSet(guid),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrSiteSlug).ValueSet(siteSlug),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrJobKind).ValueSet(jobKind),
	)
}

// jobKindAttr is the search attributes of work that names only its kind.
func jobKindAttr(kind string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrJobKind).ValueSet(kind))
}
