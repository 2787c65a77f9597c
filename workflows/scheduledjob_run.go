package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// runJob executes a prepared run as a child workflow.
func runJob(ctx workflow.Context, plan scheduledjobs.FirePlan) error {
	return temporal.NewNonRetryableApplicationError("runs of "+plan.Kind+" jobs are not available in this Engine", "unavailable", nil)
}
