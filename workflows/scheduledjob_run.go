package workflows

import (
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/internal/automation"
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

// executeJobRun runs a job run's fan-out as the child JobRun with the
// run's own workflow ID: a second fire of the same run (started twice,
// restarted) is refused as already started and runs nothing again.
func executeJobRun(ctx workflow.Context, runID string) error {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            automation.JobRunWorkflowID(runID),
		WorkflowIDReusePolicy: enumsReject,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttrJobKind).ValueSet("job_run")),
	})
	return ignoreStarted(workflow.ExecuteChildWorkflow(cctx, JobRun, JobRunInput{RunID: runID}).Get(ctx, nil))
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
