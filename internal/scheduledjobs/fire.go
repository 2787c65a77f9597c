package scheduledjobs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Run triggers.
const (
	TriggerSchedule = "schedule"
	TriggerRerun    = "rerun"
	TriggerManual   = "manual"
)

// RunRequest is a run a job's fire asks for.
type RunRequest struct {
	// RunID is the run's ID when the caller chose it (rerun); empty for a
	// schedule fire, which is keyed by ScheduledFor instead.
	RunID cairn.RunID
	// Kind is the run's kind (job_runs.kind): scheduled_job, workflow.
	Kind         string
	Job          Job
	Trigger      string
	Actor        string
	ScheduledFor *time.Time
	Targets      []devices.OperationTarget
	// AssemblyVersion and AssemblySHA256 pin a flow step's run to the
	// assembly version (and its body hash) the flow was saved with.
	AssemblyVersion int
	AssemblySHA256  string
}

// RunCreator creates job runs (the automation service's CreateRun): with
// ScheduledFor set it is idempotent and returns the run it already made.
type RunCreator interface {
	CreateJobRun(ctx context.Context, req RunRequest) (runID cairn.RunID, err error)
}

// Resolved is what a job's targets are at fire time.
type Resolved struct {
	Targets []devices.OperationTarget
	// Skipped are devices that exist but take no work (quarantined,
	// revoked).
	Skipped []string
	SiteIDs []int64
}

// Resolve turns a job's targets into devices now: the listed devices,
// every device of the listed sites and every device its filters match now
// inside the job's FilterScope, trust-checked (only active devices take
// work). Devices purged since the job was saved are simply absent.
func (s *Service) Resolve(ctx context.Context, job Job) (Resolved, error) {
	guids := job.Targets.Devices
	if len(job.Targets.Filters) > 0 {
		matched, err := s.matchFilters(ctx, job)
		if err != nil {
			return Resolved{}, err
		}
		guids = append(slices.Clone(guids), matched...)
	}
	rows, err := s.store.ScheduledJobTargetDevices(ctx, db.ScheduledJobTargetDevicesParams{Guids: guids,
		SiteIds: job.Targets.Sites, AllSites: true, ScopeSiteIds: []int64{}})
	if err != nil {
		return Resolved{}, err
	}
	var out Resolved
	sites := map[int64]bool{}
	for _, r := range rows {
		if r.TrustState != devicetrust.TrustActive {
			out.Skipped = append(out.Skipped, string(r.Guid))
			continue
		}
		out.Targets = append(out.Targets, devices.OperationTarget{GUID: r.Guid, Hostname: r.Hostname, SiteID: r.SiteID, SiteSlug: r.SiteSlug})
		if !sites[int64(r.SiteID)] {
			sites[int64(r.SiteID)] = true
			out.SiteIDs = append(out.SiteIDs, int64(r.SiteID))
		}
	}
	return out, nil
}

// FirePlan is what a fire does after preparing.
type FirePlan struct {
	// Skip says why nothing runs ("" : it runs).
	Skip    string
	RunID   cairn.RunID
	Kind    string
	SiteIDs []int64
}

// Prepare loads job id for one fire and resolves its targets; a fire of a
// job deleted, disabled or made manual since is skipped (plan.Skip). The
// caller creates the run for the job's kind.
func (s *Service) Prepare(ctx context.Context, id int64, trigger string) (FirePlan, Job, Resolved, error) {
	job, err := s.GetSystem(ctx, id)
	if cairn.ErrorCode(err) == cairn.ECodeNotFound {
		return FirePlan{Skip: "the job was deleted"}, Job{}, Resolved{}, nil
	}
	if err != nil {
		return FirePlan{}, Job{}, Resolved{}, err
	}
	if trigger == TriggerSchedule && (!job.Enabled || !job.Schedule.Fires()) {
		return FirePlan{Skip: "the job is disabled or manual"}, job, Resolved{}, nil
	}
	res, err := s.Resolve(ctx, job)
	if err != nil {
		return FirePlan{}, Job{}, Resolved{}, err
	}
	return FirePlan{Kind: job.Kind, SiteIDs: res.SiteIDs}, job, res, nil
}

// ResolveDevices resolves a list of device GUIDs like a job's targets.
func (s *Service) ResolveDevices(ctx context.Context, guids []string) (Resolved, error) {
	return s.Resolve(ctx, Job{Targets: Targets{Devices: guids, Sites: []int64{}}})
}

// matchFilters evaluates the job's saved filters inside its FilterScope.
// A targeted filter cannot be deleted (scheduled_job_filters), so a
// missing one is an error, not an empty match.
func (s *Service) matchFilters(ctx context.Context, job Job) ([]string, error) {
	if s.filters == nil {
		return nil, fmt.Errorf("scheduled job %d targets device filters, but no filter matcher is wired", job.ID)
	}
	refs, err := s.filters.MatchSaved(ctx, job.FilterScope, job.Targets.Filters)
	if err != nil {
		return nil, fmt.Errorf("scheduled job %d: match its device filters: %w", job.ID, err)
	}
	return guidsOf(refs), nil
}

// FilterDevices returns the GUIDs of the devices inside scope that saved
// filter id matches now (a quick run aimed at a filter); not_found when
// the filter is absent.
func (s *Service) FilterDevices(ctx context.Context, scope cairn.SiteScope, id int64) ([]string, error) {
	if s.filters == nil {
		return nil, cairn.Errorf(cairn.ECodeUnavailable, "device filters are not available in this process")
	}
	refs, err := s.filters.MatchSaved(ctx, scope, []int64{id})
	if err != nil {
		return nil, err
	}
	return guidsOf(refs), nil
}

func guidsOf(refs []devicefilters.DeviceRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = string(r.GUID)
	}
	return out
}
