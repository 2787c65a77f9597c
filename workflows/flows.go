package workflows

import (
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// FlowRunWorkflowID names the Temporal workflow of a flow run
// (/api/workflows), so an SRE finds it in the Temporal UI by run ID.
func FlowRunWorkflowID(runID cairn.RunID) string { return string("flow-run:" + runID) }

// stepRunNamespace derives step run IDs: the same flow run and step give
// the same job run ID however often the step is retried or replayed.
var stepRunNamespace = uuid.MustParse("5f0c3b5e-8f44-4f0e-9b8e-2c7a1d9e6a10")

// StepRunID is the job run ID of one step of a flow run.
func StepRunID(flowRunID, stepID string) string {
	return uuid.NewSHA1(stepRunNamespace, []byte(flowRunID+"/"+stepID)).String()
}

// FlowRunInput names the flow run to execute.
type FlowRunInput struct {
	RunID cairn.RunID
}

// FlowRun executes a flow run: it holds a slot of each of its devices'
// sites' scheduled lanes, then runs the steps in order, each as one job
// run (a JobRun child workflow), deciding each step's fate from the
// status of the last step that ran (always, on_success, on_failure), and
// records every step's status and run ID as it goes. The run fails when
// a step that ran failed.
func FlowRun(ctx workflow.Context, in FlowRunInput) (flows.Run, error) {
	act := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.ScheduledJobs
	var plan activities.FlowPlan
	if err := workflow.ExecuteActivity(act, a.LoadFlowRun, in.RunID).Get(ctx, &plan); err != nil {
		return flows.Run{}, err
	}
	run := plan.Run
	save := func() error { return workflow.ExecuteActivity(act, a.SaveFlowRun, run).Get(ctx, nil) }
	holder := FlowRunWorkflowID(run.RunID)
	defer func() {
		rctx, _ := workflow.NewDisconnectedContext(act)
		_ = workflow.ExecuteActivity(rctx, a.ReleaseSlots, holder).Get(rctx, nil)
	}()
	if err := acquireSlots(ctx, plan.SiteIDs, holder, scheduledjobs.SlotWorkflow); err != nil {
		return run, err
	}
	run.Status = flows.StatusRunning
	if err := save(); err != nil {
		return run, err
	}
	last, failed := "", false
	for i, step := range plan.Steps {
		if i >= len(run.Steps) {
			break
		}
		if !flows.Next(step.Condition, last) {
			run.Steps[i].Status = flows.StatusSkipped
			if err := save(); err != nil {
				return run, err
			}
			continue
		}
		runID := StepRunID(string(run.RunID), step.ID)
		run.Steps[i].RunID, run.Steps[i].Status = cairn.RunID(runID), flows.StatusRunning
		if err := save(); err != nil {
			return run, err
		}
		status, err := runStep(ctx, activities.StepInput{RunID: cairn.RunID(runID), Step: step, Run: run, StepNo: i})
		if err != nil {
			// The step could not run at all (no such assembly any more,
			// ...): it failed, and the conditions go on from there.
			workflow.GetLogger(ctx).Warn("flow step failed to run", "run_id", run.RunID, "step", step.ID, "err", err)
			status = flows.StatusFailed
		}
		if status != flows.StatusSucceeded {
			status, failed = flows.StatusFailed, true
		}
		run.Steps[i].Status, last = status, status
		if err := save(); err != nil {
			return run, err
		}
	}
	run.Status = flows.StatusSucceeded
	if failed {
		run.Status = flows.StatusFailed
	}
	return run, save()
}

// runStep creates a step's job run, executes it and returns its status.
func runStep(ctx workflow.Context, in activities.StepInput) (string, error) {
	act := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.ScheduledJobs
	var runID string
	if err := workflow.ExecuteActivity(act, a.CreateStepRun, in).Get(ctx, &runID); err != nil {
		return "", err
	}
	if err := executeJobRun(ctx, cairn.RunID(runID)); err != nil {
		return "", err
	}
	var status string
	err := workflow.ExecuteActivity(act, a.JobRunStatus, runID).Get(ctx, &status)
	return status, err
}
