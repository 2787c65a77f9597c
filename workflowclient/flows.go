package workflowclient

import (
	"context"

	"github.com/cairn-rmm/cairn"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/workflows"
)

// FlowStarter starts flow runs (flows.Starter).
type FlowStarter struct {
	Client    client.Client
	TaskQueue string
}

// StartFlow starts the workflow of a recorded flow run.
func (s FlowStarter) StartFlow(ctx context.Context, runID cairn.RunID) error {
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       workflows.FlowRunWorkflowID(runID),
		TaskQueue:                s.TaskQueue,
		WorkflowExecutionTimeout: workflows.JobFireTimeout,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    jobKindAttr("workflow_run"),
	}, workflows.FlowRun, workflows.FlowRunInput{RunID: runID})
	return err
}
