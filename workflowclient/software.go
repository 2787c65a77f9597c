package workflowclient

import (
	"cmp"
	"context"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/workflows"
)

// StartUninstall starts a software uninstall (its job run, then a
// software refresh) on the Engine queue.
func (s JobRunStarter) StartUninstall(ctx context.Context, in workflows.SoftwareUninstallInput) error {
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                    workflows.SoftwareUninstallWorkflowID(in.RunID),
		TaskQueue:             cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: deviceAttrs(string(in.Refresh.Target.GUID), in.Refresh.Target.SiteSlug, "software_uninstall"),
	}, workflows.SoftwareUninstall, in)
	return err
}

// Granted is in with its grant signed for ttl: for an operation another
// workflow starts later (the refresh after an uninstall), authorised here
// where the operator asked for it.
func (r OperationRunner) Granted(ctx context.Context, in workflows.OperationInput, ttl time.Duration) (workflows.OperationInput, error) {
	grant, err := r.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: in.OperationID, Type: in.Type,
		Payload: in.Payload, Actor: in.Actor}, ttl)
	in.Grant = grant
	return in, err
}
