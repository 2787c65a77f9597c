package scheduledjobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
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
func (a AutomationRuns) CreateJobRun(ctx context.Context, req RunRequest) (cairn.RunID, error) {
	if req.RunID != "" {
		if run, err := a.Svc.GetRun(ctx, cairn.AllSites, string(req.RunID), false); err == nil {
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
	if req.AssemblyVersion > 0 {
		spec.AssemblyVersion, spec.AssemblySHA256 = req.AssemblyVersion, req.AssemblySHA256
	}
	if len(req.Job.Signed) > 0 && req.Job.AssemblyVersion != nil {
		var signed proto.Signed
		if err := json.Unmarshal(req.Job.Signed, &signed); err != nil {
			return "", fmt.Errorf("scheduled job %d: stored payload: %w", req.Job.ID, err)
		}
		spec.Signed, spec.AssemblyVersion = &signed, int(*req.Job.AssemblyVersion)
	}
	run, err := a.Svc.CreateRun(ctx, spec)
	return run.ID, err
}

// SignJobContent signs a script job's content when it is saved.
func (a AutomationRuns) SignJobContent(ctx context.Context, assemblyID int64, params map[string]any, timeoutSeconds int) ([]byte, int32, error) {
	signed, version, err := a.Svc.SignContent(ctx, automation.RunSpec{AssemblyID: &assemblyID, Parameters: params,
		TimeoutSeconds: timeoutSeconds})
	if err != nil {
		return nil, 0, err
	}
	raw, err := json.Marshal(signed)
	return raw, int32(version), err
}
