package workflowclient

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
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
}

// Run starts in on the device's site queue and waits until it ends or ctx
// does; the operation goes on either way (it is recorded in the device's
// activity). A failure is returned as a *cairn.Error with the operation's
// code.
func (r OperationRunner) Run(ctx context.Context, in workflows.OperationInput) (workflows.OperationResult, error) {
	run, err := r.Start(ctx, in)
	if err != nil {
		return workflows.OperationResult{}, err
	}
	var res workflows.OperationResult
	err = run.Get(ctx, &res)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil || Unavailable(err) != nil {
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
