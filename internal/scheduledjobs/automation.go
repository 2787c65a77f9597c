package scheduledjobs

import (
	"context"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/automation"
)

// AutomationRuns creates job runs through the automation service (the
// RunCreator of the Engine).
type AutomationRuns struct {
	Svc *automation.Service
}

// CreateJobRun creates the run req asks for. A schedule fire's run is
// idempotent by fire time (CreateRun); a run with a chosen ID (rerun, a
// workflow step) is looked up first, so a retried activity finds the run
// it made instead of failing on the duplicate ID.
func (a AutomationRuns) CreateJobRun(ctx context.Context, req RunRequest) (string, error) {
	if req.RunID != "" {
		if run, err := a.Svc.GetRun(ctx, cairn.AllSites, req.RunID, false); err == nil {
			return run.ID, nil
		} else if cairn.ErrorCode(err) != cairn.ECodeNotFound {
			return "", err
		}
	}
	spec := automation.RunSpec{ID: req.RunID, Kind: req.Kind, Trigger: req.Trigger, ScheduledFor: req.ScheduledFor,
		AssemblyID: req.Job.AssemblyID, Parameters: req.Job.Parameters, TimeoutSeconds: req.Job.Options.TimeoutSeconds,
		RequestedBy: req.Actor, Targets: req.Targets, RunWhenOnline: req.Job.Options.RunWhenOnline}
	if req.Job.ID != 0 {
		id := req.Job.ID
		spec.ScheduledJobID = &id
	}
	if req.Actor == "" {
		spec.RequestedBy = "schedule"
	}
	run, err := a.Svc.CreateRun(ctx, spec)
	return run.ID, err
}
