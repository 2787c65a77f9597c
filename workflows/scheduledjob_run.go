package workflows

import (
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// runJob executes a prepared run as a child workflow: a script job's
// JobRun, a workflow job's FlowRun.
func runJob(ctx workflow.Context, plan scheduledjobs.FirePlan) error {
	if plan.Kind == scheduledjobs.KindWorkflow {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            FlowRunWorkflowID(plan.RunID),
			WorkflowIDReusePolicy: enumsReject,
		})
		return ignoreStarted(workflow.ExecuteChildWorkflow(cctx, FlowRun, FlowRunInput{RunID: plan.RunID}).Get(ctx, nil))
	}
	return executeJobRun(ctx, plan.RunID)
}

// executeJobRun runs a job run's fan-out.
func executeJobRun(ctx workflow.Context, runID string) error {
	return temporal.NewNonRetryableApplicationError("job runs are not available in this Engine", "unavailable", nil)
}

const (
	enumsReject = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
)

// ignoreStarted treats a child that already ran (or runs) under its ID as
// done: a fire or flow started twice must not run its work twice.
func ignoreStarted(err error) error {
	var started *temporal.ChildWorkflowExecutionAlreadyStartedError
	if errors.As(err, &started) {
		return nil
	}
	return err
}
