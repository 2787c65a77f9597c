package workflowclient

import (
	"cmp"
	"context"
	"errors"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"

	"github.com/cairn-rmm/cairn/workflows"
)

// RestoreStarter runs BackupRestore workflows.
type RestoreStarter struct {
	Client client.Client
	// TaskQueue is EngineTaskQueue when empty.
	TaskQueue string
}

// Run starts the restore of a staged backup and waits for its result.
func (s RestoreStarter) Run(ctx context.Context, in workflows.BackupRestoreInput) (workflows.BackupRestoreResult, error) {
	run, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                    workflows.BackupRestoreWorkflowID(in.ID),
		TaskQueue:             cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrJobKind).ValueSet(workflows.JobKindRestore)),
	}, workflows.BackupRestore, in)
	if err != nil {
		return workflows.BackupRestoreResult{}, err
	}
	var res workflows.BackupRestoreResult
	err = run.Get(ctx, &res)
	var app *temporal.ApplicationError
	if err != nil && errors.As(err, &app) && app.Type() != "" {
		return res, cairn.Errorf(app.Type(), "%s", app.Message())
	}
	return res, err
}
