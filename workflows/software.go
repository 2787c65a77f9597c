package workflows

import (
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/automation"
)

// SoftwareUninstallWorkflowID names the uninstall that a job run carries.
func SoftwareUninstallWorkflowID(runID cairn.RunID) string {
	return "software-uninstall:" + string(runID)
}

// SoftwareUninstallInput is one uninstall: the job run whose signed
// script removes the software, and the software refresh that follows it,
// granted where the operator asked for the uninstall.
type SoftwareUninstallInput struct {
	RunID   cairn.RunID
	Refresh OperationInput
}

// SoftwareUninstall runs the uninstall's job run (a JobRun child: the
// signed quick_job_run and its recorded outcome), then, whatever it did,
// reads the device's software again (a DeviceOperation child on the
// device's site queue) so the inventory shows what is left. The
// uninstall's outcome is the run's; a refresh that fails is recorded in
// the device's activity and ends nothing else.
func SoftwareUninstall(ctx workflow.Context, in SoftwareUninstallInput) error {
	run := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            automation.JobRunWorkflowID(in.RunID),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	})
	runErr := workflow.ExecuteChildWorkflow(run, JobRun, JobRunInput{RunID: in.RunID}).Get(ctx, nil)
	refresh := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            OperationWorkflowID(in.Refresh.Target.GUID, in.Refresh.OperationID),
		TaskQueue:             SiteTaskQueue(in.Refresh.Target.SiteSlug),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	})
	if err := workflow.ExecuteChildWorkflow(refresh, DeviceOperation, in.Refresh).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("software refresh after an uninstall failed", "run_id", in.RunID, "err", err)
	}
	return runErr
}
