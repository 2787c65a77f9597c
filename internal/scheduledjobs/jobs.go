// Package scheduledjobs is the domain of scheduled jobs: what runs (an
// assembly, an automation workflow, agent maintenance), on which targets,
// when. PostgreSQL is the source of truth; every job whose schedule fires
// by itself is mirrored as a Temporal Schedule through the Schedules
// interface (workflowclient.JobScheduler), so this package stays free of
// Temporal. The site-worker lane slots live here too (slots.go).
package scheduledjobs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
)

// Job kinds.
const (
	KindScript           = "script"
	KindAgentMaintenance = "agent_maintenance"
	KindWorkflow         = "workflow"
	// KindPatchInstall installs patches (parameters.patch_keys) on its
	// target devices through their patch lanes (internal/patches).
	KindPatchInstall = "patch_install"
)

// PatchKeyChecker validates a patch_install job's patch keys against its
// target devices (patches.Service): it returns the normalised keys and
// adds what is wrong to v.
type PatchKeyChecker interface {
	CheckJobKeys(ctx context.Context, guids []string, params map[string]any, v *cairn.Validation) ([]string, error)
}

// Bounds of a job.
const (
	MaxName          = 200
	MaxTargetDevices = 10000
	MaxTargetSites   = 1000
	MaxTargetFilters = 50
	MaxParameters    = 64
	MaxTimeout       = 86400
)

// Targets are what a job runs on; they resolve to devices when it fires.
type Targets struct {
	Devices []string `json:"devices" limit:"max=10000"`
	Sites   []int64  `json:"sites" limit:"max=1000"`
	// Filters are saved device filter IDs, resolved when the job fires,
	// inside the job's FilterScope.
	Filters []int64 `json:"filters" limit:"max=50"`
}

// Options tune one job.
type Options struct {
	RunWhenOnline      bool `json:"run_when_online"`
	TimeoutSeconds     int  `json:"timeout_seconds"`
	StopOnFirstFailure bool `json:"stop_on_first_failure"`
}

// LastRun summarizes a job's newest run.
type LastRun struct {
	RunID      cairn.RunID `json:"run_id"`
	Status     string      `json:"status"`
	StartedAt  *time.Time  `json:"started_at"`
	FinishedAt *time.Time  `json:"finished_at"`
}

// Job is one scheduled job.
type Job struct {
	ID           int64
	Name         string
	Kind         string
	AssemblyID   *int64
	AssemblyName string
	WorkflowID   *int64
	Parameters   map[string]any
	Targets      Targets
	Schedule     Schedule
	Options      Options
	Enabled      bool
	// AssemblyVersion and Signed are what a script job runs: the
	// assembly version current when the job was saved, signed then.
	AssemblyVersion *int32
	Signed          []byte
	// FilterScope is the site scope of whoever last saved the job: the
	// sites its filter targets may reach when it fires (a filter is a
	// shared object, so without it a site-limited operator's filter
	// would run on every site's matching devices).
	FilterScope cairn.SiteScope
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedBy   string
	UpdatedAt   time.Time
	// NextRunAt is the next fire of an enabled job's schedule (nil: none).
	NextRunAt *time.Time
	LastRun   *LastRun
}

// Input is what an operator sets on a job.
type Input struct {
	Name       string
	Kind       string
	AssemblyID *int64
	WorkflowID *int64
	Parameters map[string]any
	Targets    Targets
	Schedule   Schedule
	Options    Options
	// Enabled defaults to true.
	Enabled *bool
}

// Schedules mirrors jobs into Temporal (workflowclient.JobScheduler).
type Schedules interface {
	// Apply makes the job's Temporal Schedule match it: created or
	// updated when its schedule fires by itself, paused while it is
	// disabled, deleted when it is manual.
	Apply(ctx context.Context, job Job) error
	// Remove deletes the job's Temporal Schedule (absent is fine).
	Remove(ctx context.Context, id int64) error
	// Start fires the job now (rerun) as run runID.
	Start(ctx context.Context, job Job, runID cairn.RunID, actor string) error
}

// ContentSigner signs a script job's content when it is saved
// (automation.Service.SignContent), checking its parameters.
type ContentSigner interface {
	SignJobContent(ctx context.Context, assemblyID int64, params map[string]any, timeoutSeconds int) (signed []byte, version int32, err error)
}

// FilterMatcher evaluates saved device filters (devicefilters.Service):
// the one implementation of the filter language.
type FilterMatcher interface {
	// MatchSaved returns every device inside scope that any of the saved
	// filters ids matches now; not_found when one is absent.
	MatchSaved(ctx context.Context, scope cairn.SiteScope, ids []int64) ([]devicefilters.DeviceRef, error)
}

// Service manages scheduled jobs.
type Service struct {
	store   *db.Store
	sched   Schedules
	content ContentSigner
	filters FilterMatcher
	patches PatchKeyChecker
	now     func() time.Time
	log     *slog.Logger
}

// New returns the service; sched may be set later with SetSchedules
// (the Engine builds the Temporal side after the domain).
func New(store *db.Store, sched Schedules, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, sched: sched, now: now, log: log}
}

// Store returns the service's database (for the activities).
func (s *Service) Store() *db.Store { return s.store }

// Create validates and stores a job, then creates its Temporal Schedule
// after the commit (mirror): PostgreSQL is the source of truth, and no
// transaction is held across a call to Temporal.
func (s *Service) Create(ctx context.Context, scope cairn.SiteScope, actor string, in Input) (Job, error) {
	p, err := s.check(ctx, scope, in)
	if err != nil {
		return Job{}, err
	}
	var job Job
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		row, err := q.ScheduledJobInsert(ctx, db.ScheduledJobInsertParams{Name: p.name, Kind: p.kind, AssemblyID: in.AssemblyID,
			WorkflowID: in.WorkflowID, Parameters: p.parameters, Targets: p.targets, Schedule: p.schedule, Options: p.options,
			Enabled: p.enabled, AssemblyVersion: p.version, Signed: p.signed, TargetScope: targetScope(scope), Actor: actor})
		if err != nil {
			return err
		}
		if err := setFilters(ctx, q, row.ID, p.filters); err != nil {
			return err
		}
		job, err = s.decorate(ctx, q, row)
		return err
	})
	if err != nil {
		return Job{}, err
	}
	s.mirror(ctx, job.ID)
	return job, nil
}

// Update replaces a job's definition and its Temporal Schedule.
func (s *Service) Update(ctx context.Context, scope cairn.SiteScope, actor string, id int64, in Input) (Job, error) {
	if _, err := s.Get(ctx, scope, id); err != nil {
		return Job{}, err
	}
	p, err := s.check(ctx, scope, in)
	if err != nil {
		return Job{}, err
	}
	var job Job
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		row, err := q.ScheduledJobUpdate(ctx, db.ScheduledJobUpdateParams{ID: id, Name: p.name, Kind: p.kind, AssemblyID: in.AssemblyID,
			WorkflowID: in.WorkflowID, Parameters: p.parameters, Targets: p.targets, Schedule: p.schedule, Options: p.options,
			Enabled: p.enabled, AssemblyVersion: p.version, Signed: p.signed, TargetScope: targetScope(scope), Actor: actor})
		if err != nil {
			return db.NotFound(err, "scheduled job %d not found", id)
		}
		if err := setFilters(ctx, q, id, p.filters); err != nil {
			return err
		}
		job, err = s.decorate(ctx, q, row)
		return err
	})
	if err != nil {
		return Job{}, err
	}
	s.mirror(ctx, id)
	return job, nil
}

// Toggle enables or disables a job (pausing or resuming its schedule
// after the commit).
func (s *Service) Toggle(ctx context.Context, scope cairn.SiteScope, actor string, id int64, enabled bool) (Job, error) {
	if _, err := s.Get(ctx, scope, id); err != nil {
		return Job{}, err
	}
	var job Job
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		row, err := q.ScheduledJobSetEnabled(ctx, db.ScheduledJobSetEnabledParams{ID: id, Enabled: enabled, Actor: actor})
		if err != nil {
			return db.NotFound(err, "scheduled job %d not found", id)
		}
		job, err = s.decorate(ctx, q, row)
		return err
	})
	if err != nil {
		return Job{}, err
	}
	s.mirror(ctx, id)
	return job, nil
}

// Delete removes a job, its runs and the activity rows they left, then
// its Temporal Schedule after the commit.
func (s *Service) Delete(ctx context.Context, scope cairn.SiteScope, id int64) error {
	if _, err := s.Get(ctx, scope, id); err != nil {
		return err
	}
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		if _, err := q.ScheduledJobActivityDelete(ctx, id); err != nil {
			return err
		}
		n, err := q.ScheduledJobDelete(ctx, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return cairn.Errorf(cairn.ECodeNotFound, "scheduled job %d not found", id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.mirror(ctx, id)
	return nil
}

// ClearRuns deletes a job's run history and the activity rows it left.
func (s *Service) ClearRuns(ctx context.Context, scope cairn.SiteScope, id int64) error {
	if _, err := s.Get(ctx, scope, id); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(q *db.Queries) error {
		if _, err := q.ScheduledJobActivityDelete(ctx, id); err != nil {
			return err
		}
		if _, err := q.ScheduledJobWorkflowRunsDelete(ctx, id); err != nil {
			return err
		}
		_, err := q.ScheduledJobRunsDelete(ctx, id)
		return err
	})
}

// Rerun fires a job now as run runID (the caller makes the ID so it can
// answer with it at once). A disabled job is refused with job_disabled.
func (s *Service) Rerun(ctx context.Context, scope cairn.SiteScope, actor string, id int64, runID cairn.RunID) error {
	job, err := s.Get(ctx, scope, id)
	if err != nil {
		return err
	}
	if !job.Enabled {
		return cairn.Errorf(ECodeJobDisabled, "scheduled job %q is disabled; enable it first", job.Name)
	}
	if s.sched == nil {
		return cairn.Errorf(cairn.ECodeUnavailable, "the scheduler is not running in this process")
	}
	return s.sched.Start(ctx, job, runID, actor)
}

// ECodeJobDisabled: a disabled job cannot be rerun.
const ECodeJobDisabled = "job_disabled"

// Get returns a job inside scope.
func (s *Service) Get(ctx context.Context, scope cairn.SiteScope, id int64) (Job, error) {
	row, err := s.store.ScheduledJobGet(ctx, id)
	if err != nil {
		return Job{}, db.NotFound(err, "scheduled job %d not found", id)
	}
	job, err := s.decorate(ctx, s.store.Queries, row)
	if err != nil {
		return Job{}, err
	}
	ok, err := s.inScope(ctx, scope, []Job{job})
	if err != nil {
		return Job{}, err
	}
	if !ok[0] {
		return Job{}, cairn.Errorf(cairn.ECodeNotFound, "scheduled job %d not found", id)
	}
	return job, nil
}

// GetSystem returns a job whatever scope (for the Engine's own use).
func (s *Service) GetSystem(ctx context.Context, id int64) (Job, error) {
	row, err := s.store.ScheduledJobGet(ctx, id)
	if err != nil {
		return Job{}, db.NotFound(err, "scheduled job %d not found", id)
	}
	return s.decorate(ctx, s.store.Queries, row)
}

// List returns the operator jobs inside scope: a scoped operator sees a
// job only when every target it names lies inside its sites.
func (s *Service) List(ctx context.Context, scope cairn.SiteScope) ([]Job, error) {
	rows, err := s.store.ScheduledJobList(ctx)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(rows))
	for _, r := range rows {
		j, err := decode(r)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if err := s.fill(ctx, s.store.Queries, jobs); err != nil {
		return nil, err
	}
	ok, err := s.inScope(ctx, scope, jobs)
	if err != nil {
		return nil, err
	}
	out := jobs[:0]
	for i, j := range jobs {
		if ok[i] {
			out = append(out, j)
		}
	}
	return out, nil
}

// Schedulable lists every operator job (for the reconcile at start).
func (s *Service) Schedulable(ctx context.Context) ([]Job, error) {
	rows, err := s.store.ScheduledJobList(ctx)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(rows))
	for _, r := range rows {
		j, err := decode(r)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// PreviewSchedule validates a schedule and returns its next n fires.
func (s *Service) PreviewSchedule(sch Schedule, n int) ([]time.Time, error) {
	var v cairn.Validation
	now := s.now()
	norm := sch.Normalize("schedule", now, &v)
	if err := v.Err(); err != nil {
		return nil, err
	}
	return norm.NextRuns(now, n), nil
}

// mirror makes job id's Temporal Schedule match the committed row, after
// the commit: it reads the row again (a concurrent save committed later
// wins), applies it, or removes the schedule of a job that is gone. A
// failure (Temporal down or too busy) does not undo the save: the row is
// the truth, and the reconciliation at Engine start and by the
// maintenance:job-schedules Schedule repairs the difference.
func (s *Service) mirror(ctx context.Context, id int64) {
	if s.sched == nil {
		return
	}
	job, err := s.GetSystem(ctx, id)
	switch {
	case cairn.IsCode(err, cairn.ECodeNotFound):
		err = s.sched.Remove(ctx, id)
	case err == nil:
		err = s.sched.Apply(ctx, job)
	}
	if err != nil {
		s.log.WarnContext(ctx, "scheduled job saved; its Temporal schedule follows at the next reconciliation",
			"job_id", id, "err", err)
	}
}

// SetContentSigner wires the signing of script jobs' content.
func (s *Service) SetContentSigner(c ContentSigner) { s.content = c }

// SetFilterMatcher wires the evaluation of saved device filters.
func (s *Service) SetFilterMatcher(m FilterMatcher) { s.filters = m }

// SetPatchKeyChecker wires the validation of patch_install jobs.
func (s *Service) SetPatchKeyChecker(c PatchKeyChecker) { s.patches = c }

// SetSchedules wires the Temporal side.
func (s *Service) SetSchedules(sched Schedules) { s.sched = sched }

type checked struct {
	name, kind                             string
	parameters, targets, schedule, options []byte
	enabled                                bool
	version                                *int32
	signed                                 []byte
	filters                                []int64
}

// check validates every field of in against the database and scope and
// returns the values to store.
func (s *Service) check(ctx context.Context, scope cairn.SiteScope, in Input) (checked, error) {
	var v cairn.Validation
	out := checked{name: strings.TrimSpace(in.Name), kind: in.Kind, enabled: in.Enabled == nil || *in.Enabled}
	if n := len([]rune(out.name)); n == 0 || n > MaxName {
		v.Add("name", fmt.Sprintf("must be 1 to %d characters", MaxName))
	}
	switch in.Kind {
	case KindScript:
		if in.AssemblyID == nil {
			v.Add("assembly_id", "is required for a script job")
		} else if a, err := s.store.ScheduledJobAssembly(ctx, *in.AssemblyID); err != nil {
			if !db.IsNoRows(err) {
				return out, err
			}
			v.Add("assembly_id", "no such assembly")
		} else if a.Kind != "script" && a.Kind != "ansible_playbook" {
			v.Add("assembly_id", "must be a script or Ansible playbook assembly")
		}
		if in.WorkflowID != nil {
			v.Add("workflow_id", "only workflow jobs name a workflow")
		}
	case KindWorkflow:
		if in.WorkflowID == nil {
			v.Add("workflow_id", "is required for a workflow job")
		} else if _, err := s.store.AutomationWorkflowGet(ctx, *in.WorkflowID); err != nil {
			if !db.IsNoRows(err) {
				return out, err
			}
			v.Add("workflow_id", "no such workflow")
		}
		if in.AssemblyID != nil {
			v.Add("assembly_id", "only script jobs name an assembly")
		}
	case KindAgentMaintenance:
		if in.AssemblyID != nil {
			v.Add("assembly_id", "only script jobs name an assembly")
		}
		if in.WorkflowID != nil {
			v.Add("workflow_id", "only workflow jobs name a workflow")
		}
	case KindPatchInstall:
		if in.AssemblyID != nil {
			v.Add("assembly_id", "only script jobs name an assembly")
		}
		if in.WorkflowID != nil {
			v.Add("workflow_id", "only workflow jobs name a workflow")
		}
		if len(in.Targets.Sites) > 0 || len(in.Targets.Filters) > 0 {
			v.Add("targets", "a patch_install job targets devices only")
		}
	case "":
		v.Add("kind", "is required: script, agent_maintenance, workflow or patch_install")
	default:
		v.Add("kind", "must be script, agent_maintenance, workflow or patch_install")
	}
	if len(in.Parameters) > MaxParameters {
		v.Add("parameters", fmt.Sprintf("at most %d parameters", MaxParameters))
	}
	for k := range in.Parameters {
		if strings.TrimSpace(k) == "" {
			v.Add("parameters", "names must not be blank")
		}
	}
	targets, err := s.checkTargets(ctx, scope, in.Targets, &v)
	if err != nil {
		return out, err
	}
	params := in.Parameters
	// Keys are checked once the targets are known good: a device outside
	// scope must not tell which patches it has pending.
	if in.Kind == KindPatchInstall && len(in.Targets.Sites) == 0 && len(in.Targets.Filters) == 0 && v.Err() == nil {
		if s.patches == nil {
			return out, cairn.Errorf(cairn.ECodeUnavailable, "patch install jobs are not available in this process")
		}
		// Devices outside scope or unknown were reported by checkTargets.
		keys, err := s.patches.CheckJobKeys(ctx, targets.Devices, in.Parameters, &v)
		if err != nil {
			return out, err
		}
		params = map[string]any{"patch_keys": keys}
	}
	sch := in.Schedule.Normalize("schedule", s.now(), &v)
	if in.Options.TimeoutSeconds < 0 || in.Options.TimeoutSeconds > MaxTimeout {
		v.Add("options.timeout_seconds", fmt.Sprintf("must be 1 to %d, or 0 for the assembly's own", MaxTimeout))
	}
	if err := v.Err(); err != nil {
		return out, err
	}
	if params == nil {
		params = map[string]any{}
	}
	if in.Kind == KindScript && s.content != nil {
		signed, version, err := s.content.SignJobContent(ctx, *in.AssemblyID, params, in.Options.TimeoutSeconds)
		if err != nil {
			return out, err
		}
		out.signed, out.version = signed, &version
	}
	out.parameters, _ = json.Marshal(params)
	out.targets, _ = json.Marshal(targets)
	out.filters = targets.Filters
	out.schedule, _ = json.Marshal(sch)
	out.options, _ = json.Marshal(in.Options)
	return out, nil
}

// checkTargets validates targets: every device and site exists and lies
// inside scope (outside answers like absent), every filter exists (filters
// are shared objects; what they reach is bounded by scope when the job
// fires), at least one is named.
func (s *Service) checkTargets(ctx context.Context, scope cairn.SiteScope, t Targets, v *cairn.Validation) (Targets, error) {
	out := Targets{Devices: dedupe(t.Devices), Sites: dedupe(t.Sites), Filters: dedupe(t.Filters)}
	if len(out.Devices) == 0 && len(out.Sites) == 0 && len(out.Filters) == 0 {
		v.Add("targets", "name at least one device, site or device filter")
	}
	if len(out.Filters) > MaxTargetFilters {
		v.Add("targets.filters", fmt.Sprintf("at most %d device filters", MaxTargetFilters))
		return out, nil
	}
	if len(out.Filters) > 0 {
		ids, err := s.store.DeviceFilterIDsExisting(ctx, out.Filters)
		if err != nil {
			return out, err
		}
		for _, id := range out.Filters {
			if !slices.Contains(ids, id) {
				v.Add("targets.filters", fmt.Sprintf("unknown device filter %d", id))
				break
			}
		}
	}
	if len(out.Devices) > MaxTargetDevices {
		v.Add("targets.devices", fmt.Sprintf("at most %d devices", MaxTargetDevices))
		return out, nil
	}
	if len(out.Sites) > MaxTargetSites {
		v.Add("targets.sites", fmt.Sprintf("at most %d sites", MaxTargetSites))
		return out, nil
	}
	if len(out.Devices) > 0 {
		rows, err := s.store.DeviceSitesByGUIDs(ctx, out.Devices)
		if err != nil {
			return out, err
		}
		known := map[string]bool{}
		for _, r := range rows {
			if scope.Allows(r.SiteID) {
				known[string(r.Guid)] = true
			}
		}
		for _, g := range out.Devices {
			if !known[g] {
				v.Add("targets.devices", "unknown device "+g)
				break
			}
		}
	}
	if len(out.Sites) > 0 {
		ids, err := s.store.SiteIDsExisting(ctx, out.Sites)
		if err != nil {
			return out, err
		}
		for _, id := range out.Sites {
			if !slices.Contains(ids, cairn.SiteID(id)) || !scope.Allows(cairn.SiteID(id)) {
				v.Add("targets.sites", fmt.Sprintf("unknown site %d", id))
				break
			}
		}
	}
	return out, nil
}

// inScope reports per job whether every target lies inside scope.
func (s *Service) inScope(ctx context.Context, scope cairn.SiteScope, jobs []Job) ([]bool, error) {
	ok := make([]bool, len(jobs))
	if scope.All {
		for i := range ok {
			ok[i] = true
		}
		return ok, nil
	}
	var guids []string
	for _, j := range jobs {
		guids = append(guids, j.Targets.Devices...)
	}
	siteOf := map[string]int64{}
	if len(guids) > 0 {
		rows, err := s.store.DeviceSitesByGUIDs(ctx, dedupe(guids))
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			siteOf[string(r.Guid)] = int64(r.SiteID)
		}
	}
	for i, j := range jobs {
		ok[i] = true
		// A filter target reaches the sites recorded when the job was
		// saved: the job is this operator's only if all lie inside its
		// own (a job saved with every site never is).
		if len(j.Targets.Filters) > 0 {
			ok[i] = !j.FilterScope.All
			for _, id := range j.FilterScope.SiteIDs {
				ok[i] = ok[i] && scope.Allows(cairn.SiteID(id))
			}
		}
		for _, id := range j.Targets.Sites {
			ok[i] = ok[i] && scope.Allows(cairn.SiteID(id))
		}
		for _, g := range j.Targets.Devices {
			// A device that went away (purge rewrites targets) is no
			// reason to hide the job.
			if site, known := siteOf[g]; known {
				ok[i] = ok[i] && scope.Allows(cairn.SiteID(site))
			}
		}
	}
	return ok, nil
}

func dedupe[T comparable](in []T) []T {
	out := []T{}
	seen := map[T]bool{}
	for _, x := range in {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func decode(r db.ScheduledJob) (Job, error) {
	j := Job{ID: r.ID, Name: r.Name, Kind: r.Kind, AssemblyID: r.AssemblyID, WorkflowID: r.WorkflowID, Enabled: r.Enabled,
		AssemblyVersion: r.AssemblyVersion, Signed: r.Signed, FilterScope: cairn.SiteScope{All: r.TargetScope == nil, SiteIDs: r.TargetScope},
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt, Parameters: map[string]any{}}
	for _, f := range []struct {
		raw []byte
		to  any
	}{{r.Parameters, &j.Parameters}, {r.Targets, &j.Targets}, {r.Schedule, &j.Schedule}, {r.Options, &j.Options}} {
		if len(f.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(f.raw, f.to); err != nil {
			return Job{}, fmt.Errorf("scheduled job %d: decode stored field: %w", r.ID, err)
		}
	}
	if j.Targets.Devices == nil {
		j.Targets.Devices = []string{}
	}
	if j.Targets.Sites == nil {
		j.Targets.Sites = []int64{}
	}
	if j.Targets.Filters == nil {
		j.Targets.Filters = []int64{}
	}
	if j.Parameters == nil {
		j.Parameters = map[string]any{}
	}
	return j, nil
}

// decorate decodes one row and fills what is derived.
func (s *Service) decorate(ctx context.Context, q *db.Queries, r db.ScheduledJob) (Job, error) {
	j, err := decode(r)
	if err != nil {
		return Job{}, err
	}
	jobs := []Job{j}
	if err := s.fill(ctx, q, jobs); err != nil {
		return Job{}, err
	}
	return jobs[0], nil
}

// fill adds assembly names, last runs and next fires.
func (s *Service) fill(ctx context.Context, q *db.Queries, jobs []Job) error {
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	last, err := q.ScheduledJobLastRuns(ctx, ids)
	if err != nil {
		return err
	}
	byJob := map[int64]*LastRun{}
	for _, r := range last {
		byJob[r.ScheduledJobID] = &LastRun{RunID: r.ID, Status: r.Status, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	}
	names := map[int64]string{}
	now := s.now()
	for i := range jobs {
		j := &jobs[i]
		j.LastRun = byJob[j.ID]
		if j.AssemblyID != nil {
			name, ok := names[*j.AssemblyID]
			if !ok {
				if a, err := q.ScheduledJobAssembly(ctx, *j.AssemblyID); err == nil {
					name = a.Name
				}
				names[*j.AssemblyID] = name
			}
			j.AssemblyName = name
		}
		if j.Enabled {
			if next := j.Schedule.NextRuns(now, 1); len(next) == 1 {
				j.NextRunAt = &next[0]
			}
		}
	}
	return nil
}

// targetScope is what a job records of its saver's scope: nil for every
// site, else the saver's sites.
func targetScope(scope cairn.SiteScope) []int64 {
	if scope.All {
		return nil
	}
	return scope.IDs()
}

// setFilters makes the job's filter links match ids. The links' foreign
// key keeps a targeted filter from being deleted: inserting one locks the
// filter row against the delete (which locks it first, then answers
// filter_in_use), and a filter deleted between the check and the save
// fails here.
func setFilters(ctx context.Context, q *db.Queries, jobID int64, ids []int64) error {
	if err := q.ScheduledJobFiltersClear(ctx, jobID); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	err := q.ScheduledJobFiltersAdd(ctx, db.ScheduledJobFiltersAddParams{ScheduledJobID: jobID, FilterIds: ids})
	if db.IsForeignKeyViolation(err) {
		return cairn.Invalid("targets.filters", "a device filter was deleted meanwhile")
	}
	return err
}
