package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
)

// WorkerProbe checks that a worker serves its task queue: it runs one
// activity on the same queue and returns which worker answered. An SRE can
// start it from the Temporal UI or CLI against any site queue; the worker
// tests use it to prove a site worker runs.
func WorkerProbe(ctx workflow.Context) (activities.WorkerIdentity, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: 30 * time.Second,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var a *activities.Probe
	var id activities.WorkerIdentity
	err := workflow.ExecuteActivity(ctx, a.Identify).Get(ctx, &id)
	return id, err
}
