package scheduledjobs

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Counts are a run's results by status.
type Counts struct {
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	TimedOut  int `json:"timed_out"`
	Skipped   int `json:"skipped"`
}

// Run is one execution of a job in a job's run list (the quick-run shape
// of docs/api.md without results; one run with its results is the
// automation service's GetRun).
type Run struct {
	RunID           cairn.RunID `json:"run_id"`
	Kind            string      `json:"kind"`
	Status          string      `json:"status"`
	AssemblyID      *int64      `json:"assembly_id"`
	AssemblyName    string      `json:"assembly_name"`
	AssemblyVersion *int32      `json:"assembly_version"`
	Language        string      `json:"language"`
	RequestedBy     string      `json:"requested_by"`
	Trigger         string      `json:"trigger"`
	ScheduledJobID  *int64      `json:"scheduled_job_id"`
	ScheduledFor    *time.Time  `json:"scheduled_for"`
	CreatedAt       time.Time   `json:"created_at"`
	StartedAt       *time.Time  `json:"started_at"`
	FinishedAt      *time.Time  `json:"finished_at"`
	TimeoutSeconds  int32       `json:"timeout_seconds"`
	Counts          Counts      `json:"counts"`
}

// Bounds of run listings.
const (
	DefaultRunPage = 20
	MaxRunPage     = 100
)

// Runs lists a job's runs, newest first, without per-device results.
func (s *Service) Runs(ctx context.Context, scope cairn.SiteScope, id int64, limit int) ([]Run, error) {
	if _, err := s.Get(ctx, scope, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxRunPage {
		limit = DefaultRunPage
	}
	rows, err := s.store.ScheduledJobRunList(ctx, db.ScheduledJobRunListParams{ScheduledJobID: &id, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = Run{RunID: r.ID, Kind: r.Kind, Status: r.Status, AssemblyID: r.AssemblyID, AssemblyName: deref(r.AssemblyName),
			AssemblyVersion: r.AssemblyVersion, Language: r.Language, RequestedBy: r.RequestedBy, Trigger: r.Trigger,
			ScheduledJobID: r.ScheduledJobID, ScheduledFor: r.ScheduledFor, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt,
			FinishedAt: r.FinishedAt, TimeoutSeconds: r.TimeoutSeconds, Counts: Counts{Pending: int(r.NPending), Running: int(r.NRunning),
				Succeeded: int(r.NSucceeded), Failed: int(r.NFailed), TimedOut: int(r.NTimedOut), Skipped: int(r.NSkipped)}}
	}
	return out, nil
}

// DeviceRun is one device's part in a run.
type DeviceRun struct {
	RunID            cairn.RunID `json:"run_id"`
	ScheduledJobID   *int64      `json:"scheduled_job_id"`
	ScheduledJobName *string     `json:"scheduled_job_name"`
	Kind             string      `json:"kind"`
	Status           string      `json:"status"`
	ExitCode         *int32      `json:"exit_code"`
	StartedAt        *time.Time  `json:"started_at"`
	FinishedAt       *time.Time  `json:"finished_at"`
}

// DeviceRuns lists a device's runs inside scope, newest first.
func (s *Service) DeviceRuns(ctx context.Context, scope cairn.SiteScope, guid cairn.DeviceGUID, limit int) ([]DeviceRun, error) {
	if limit <= 0 || limit > MaxRunPage {
		limit = DefaultRunPage
	}
	sites, err := s.store.DeviceSitesByGUIDs(ctx, []string{string(guid)})
	if err != nil {
		return nil, err
	}
	if len(sites) == 0 || !scope.Allows(sites[0].SiteID) {
		return nil, cairn.Errorf(cairn.ECodeNotFound, "device not found")
	}
	rows, err := s.store.ScheduledJobDeviceRuns(ctx, db.ScheduledJobDeviceRunsParams{Guid: guid, AllSites: scope.All,
		SiteIds: scope.IDs(), MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]DeviceRun, len(rows))
	for i, r := range rows {
		out[i] = DeviceRun{RunID: r.RunID, ScheduledJobID: r.ScheduledJobID, ScheduledJobName: r.ScheduledJobName, Kind: r.Kind,
			Status: r.Status, ExitCode: r.ExitCode, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// RunStatus returns a job run's status.
func (s *Service) RunStatus(ctx context.Context, runID cairn.RunID) (string, error) {
	r, err := s.store.ScheduledJobRunGet(ctx, runID)
	if err != nil {
		return "", db.NotFound(err, "run not found")
	}
	return r.Status, nil
}
