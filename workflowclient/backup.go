package workflowclient

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

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

// ScheduledBackupStarter starts the ScheduledBackup workflow.
type ScheduledBackupStarter struct {
	Client client.Client
	// TaskQueue is EngineTaskQueue when empty.
	TaskQueue string
}

// Start starts a scheduled backup, or joins the one running. An Engine on
// its own queue name (tests sharing a Temporal server) has its own.
func (s ScheduledBackupStarter) Start(ctx context.Context) error {
	id := workflows.ScheduledBackupWorkflowID
	if s.TaskQueue != "" && s.TaskQueue != workflows.EngineTaskQueue {
		id += ":" + s.TaskQueue
	}
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		WorkflowExecutionTimeout: 6 * time.Hour,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    jobKindAttr(workflows.JobKindScheduledBackup),
	}, workflows.ScheduledBackup, workflows.ScheduledBackupInput{ID: uuid.NewString()})
	return err
}

// RestoreDrillStarter starts the RestoreDrill workflow.
type RestoreDrillStarter struct {
	Client client.Client
	// TaskQueue is EngineTaskQueue when empty.
	TaskQueue string
}

// Start starts a restore drill, or joins the one running.
func (s RestoreDrillStarter) Start(ctx context.Context) error {
	id := workflows.RestoreDrillWorkflowID
	if s.TaskQueue != "" && s.TaskQueue != workflows.EngineTaskQueue {
		id += ":" + s.TaskQueue
	}
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		WorkflowExecutionTimeout: 6 * time.Hour,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    jobKindAttr(workflows.JobKindRestoreDrill),
	}, workflows.RestoreDrill, workflows.ScheduledBackupInput{ID: uuid.NewString()})
	return err
}
