package workflowclient

import (
	"cmp"
	"context"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/workflows"
)

// JobRunStarter starts job-run workflows (quick runs, scheduled jobs).
type JobRunStarter struct {
	Client    client.Client
	TaskQueue string
}

// Start starts the run's workflow on the Engine queue; starting a run
// that already has its workflow is not an error (a retried fire).
func (s JobRunStarter) Start(ctx context.Context, in workflows.JobRunInput) error {
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                    automation.JobRunWorkflowID(in.RunID),
		TaskQueue:             cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: jobKindAttr("job_run"),
	}, workflows.JobRun, in)
	return err
}
