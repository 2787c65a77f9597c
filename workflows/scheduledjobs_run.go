package workflows

import (
	"errors"
	"time"

	"github.com/cairn-rmm/cairn"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
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
func executeJobRun(ctx workflow.Context, runID cairn.RunID) error {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            automation.JobRunWorkflowID(runID),
		WorkflowIDReusePolicy: enumsReject,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttrJobKind).ValueSet("job_run")),
	})
	// The fire holds its sites' lane slots (ScheduledJobFire): a
	// playbook's batches take none of their own.
	return ignoreStarted(workflow.ExecuteChildWorkflow(cctx, JobRun, JobRunInput{RunID: runID, LaneHeld: true}).Get(ctx, nil))
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

// maintenanceRecheck is how often an agent_maintenance fire looks whether
// the updates it started have all ended.
const maintenanceRecheck = 15 * time.Second

// runAgentMaintenance requests and starts the updates of an
// agent_maintenance fire (run fire.RunID; each device's update is its own
// AgentUpdate workflow) and waits until every one has ended, so the fire
// holds its sites' lane slots while its updates are active. The run
// settles as each update finishes; the fire only reads it.
func runAgentMaintenance(ctx workflow.Context, fire activities.FireInput) error {
	act := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.ScheduledJobs
	var requested bool
	if err := workflow.ExecuteActivity(act, a.RequestAgentMaintenance, fire).Get(ctx, &requested); err != nil || !requested {
		return err
	}
	for {
		var status string
		if err := workflow.ExecuteActivity(act, a.JobRunStatus, fire.RunID).Get(ctx, &status); err != nil {
			return err
		}
		if status != "pending" && status != "running" {
			return nil
		}
		if err := workflow.Sleep(ctx, maintenanceRecheck); err != nil {
			return err
		}
	}
}
