// Package flows is multi-step automation: the API's /api/workflows. A flow
// is an ordered list of steps, each running a script assembly on the
// flow run's devices as one job run, with a condition on the previous
// step's result. ("Flow" keeps them apart from Temporal workflows; each
// flow run is executed by the Temporal workflow workflows.FlowRun.)
package flows

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/ownership"
)

// Step conditions: on the previous step's result (the first step always
// runs whatever its condition says).
const (
	CondAlways    = "always"
	CondOnSuccess = "on_success"
	CondOnFailure = "on_failure"
)

// Step and run statuses.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusSkipped   = "skipped"
	StatusCanceled  = "canceled"
)

// Bounds.
const (
	MaxName    = 200
	MaxSteps   = 50
	MaxDevices = 1000
	MaxTimeout = 86400
)

var stepIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// Step is one step of a flow.
type Step struct {
	ID         string `json:"id" limit:"max=40"`
	Name       string `json:"name" limit:"max=200"`
	AssemblyID int64  `json:"assembly_id"`
	// AssemblyVersion is the assembly version the step runs, chosen when
	// the flow is saved (0 on input: the version current then), and
	// AssemblySHA256 that version's body hash (hex; on input, when set,
	// it must match). A run executes exactly that version, and refuses
	// the step (assembly_changed) if its body no longer has that hash.
	AssemblyVersion int            `json:"assembly_version"`
	AssemblySHA256  string         `json:"assembly_sha256"`
	Parameters      map[string]any `json:"parameters" openapi:"types=string|number|boolean"`
	Condition       string         `json:"condition"`
	TimeoutSeconds  int            `json:"timeout_seconds"`
}

// Flow is a saved multi-step automation.
type Flow struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Steps       []Step `json:"steps"`
	// OwnerUserID is who created the flow; SiteScope the sites of
	// everyone who saved it (null: every site), which decides who may
	// change it (package ownership).
	OwnerUserID *int64    `json:"owner_user_id"`
	SiteScope   []int64   `json:"site_scope" openapi:"nullable"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Input is what an operator sets on a flow.
type Input struct {
	Name        string `json:"name" limit:"max=200"`
	Description string `json:"description" limit:"max=2000"`
	Steps       []Step `json:"steps" limit:"max=50"`
}

// StepRun is one step of a flow run: its status and job run.
type StepRun struct {
	StepID string      `json:"step_id"`
	Status string      `json:"status"`
	RunID  cairn.RunID `json:"run_id"`
}

// Run is one execution of a flow.
type Run struct {
	RunID          cairn.RunID `json:"run_id"`
	WorkflowID     int64       `json:"workflow_id"`
	ScheduledJobID *int64      `json:"scheduled_job_id"`
	Status         string      `json:"status"`
	Steps          []StepRun   `json:"steps"`
	DeviceGUIDs    []string    `json:"device_guids"`
	RequestedBy    string      `json:"requested_by"`
	// Input is the body of the webhook request that started the run
	// (null otherwise), and WebhookID that webhook.
	Input      json.RawMessage `json:"input" openapi:"nullable"`
	WebhookID  *string         `json:"webhook_id"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt *time.Time      `json:"finished_at"`
}

// Starter starts the Temporal workflow of a flow run (workflowclient.FlowStarter).
type Starter interface {
	StartFlow(ctx context.Context, runID cairn.RunID) error
}

// Service manages flows and their runs.
type Service struct {
	store   *db.Store
	starter Starter
}

// New returns the service.
func New(store *db.Store, starter Starter) *Service { return &Service{store: store, starter: starter} }

// ECodeInUse: a scheduled job still runs the flow.
const ECodeInUse = "workflow_in_use"

// Create stores a flow owned by by and scoped to by's sites, each step
// pinned to an assembly version.
func (s *Service) Create(ctx context.Context, by ownership.Editor, in Input) (Flow, error) {
	in, steps, err := s.check(ctx, in)
	if err != nil {
		return Flow{}, err
	}
	row, err := s.store.AutomationWorkflowInsert(ctx, db.AutomationWorkflowInsertParams{Name: in.Name, Description: in.Description,
		Steps: steps, Actor: by.Username, OwnerUserID: by.Owner(), SiteScope: by.Scope.Column()})
	if err != nil {
		return Flow{}, nameTaken(err)
	}
	return decode(row)
}

// Update replaces a flow's definition; runs under way keep the steps they
// started with. by must cover the flow's scope, and no scheduled job saved
// by a broader scope may run it (ownership.CheckChange).
func (s *Service) Update(ctx context.Context, by ownership.Editor, id int64, in Input) (Flow, error) {
	in, steps, err := s.check(ctx, in)
	if err != nil {
		return Flow{}, err
	}
	var row db.AutomationWorkflow
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		cur, err := q.AutomationWorkflowGetForUpdate(ctx, id)
		if err != nil {
			return db.NotFound(err, "workflow %d not found", id)
		}
		if err := mayChange(ctx, q, by, cur, true); err != nil {
			return err
		}
		row, err = q.AutomationWorkflowUpdate(ctx, db.AutomationWorkflowUpdateParams{ID: id, Name: in.Name,
			Description: in.Description, Steps: steps, Actor: by.Username,
			SiteScope: ownership.Scope(by, cairn.ScopeColumn(cur.SiteScope)).Column()})
		return err
	})
	if err != nil {
		return Flow{}, nameTaken(err)
	}
	return decode(row)
}

// mayChange refuses a change of flow f by by (ownership.CheckChange),
// with the scheduled jobs that run it as dependants when withJobs.
func mayChange(ctx context.Context, q *db.Queries, by ownership.Editor, f db.AutomationWorkflow, withJobs bool) error {
	var deps []ownership.Dependant
	if withJobs {
		jobs, err := q.AutomationWorkflowDependantJobs(ctx, &f.ID)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			deps = append(deps, ownership.Dependant{Kind: ownership.KindScheduledJob, ID: j.ID, Name: j.Name,
				Scope: cairn.ScopeColumn(j.TargetScope)})
		}
	}
	return ownership.CheckChange(by, fmt.Sprintf("workflow %d", f.ID), cairn.ScopeColumn(f.SiteScope), deps)
}

// Get returns a flow.
func (s *Service) Get(ctx context.Context, id int64) (Flow, error) {
	row, err := s.store.AutomationWorkflowGet(ctx, id)
	if err != nil {
		return Flow{}, db.NotFound(err, "workflow %d not found", id)
	}
	return decode(row)
}

// List returns every flow by name.
func (s *Service) List(ctx context.Context) ([]Flow, error) {
	rows, err := s.store.AutomationWorkflowList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Flow, 0, len(rows))
	for _, r := range rows {
		f, err := decode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// Delete removes a flow and its runs; a flow a scheduled job runs is
// refused with workflow_in_use (409), one whose scope by does not cover
// with forbidden.
func (s *Service) Delete(ctx context.Context, by ownership.Editor, id int64) error {
	cur, err := s.store.AutomationWorkflowGet(ctx, id)
	if err != nil {
		return db.NotFound(err, "workflow %d not found", id)
	}
	if err := mayChange(ctx, s.store.Queries, by, cur, false); err != nil {
		return err
	}
	used, err := s.store.AutomationWorkflowUsedByJob(ctx, &id)
	if err != nil {
		return err
	}
	if used {
		return cairn.Errorf(ECodeInUse, "a scheduled job runs workflow %d; delete or change the job first", id)
	}
	n, err := s.store.AutomationWorkflowDelete(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "workflow %d not found", id)
	}
	return nil
}

// Start runs a flow on devices inside scope now and returns the run ID.
func (s *Service) Start(ctx context.Context, scope cairn.SiteScope, actor string, id int64, guids []string) (string, error) {
	return s.start(ctx, scope, actor, id, guids, trigger{})
}

// trigger is what started a run besides an operator: a webhook and its body.
type trigger struct {
	input     []byte
	webhookID *string
}

func (s *Service) start(ctx context.Context, scope cairn.SiteScope, actor string, id int64, guids []string, tr trigger) (string, error) {
	if len(guids) == 0 || len(guids) > MaxDevices {
		return "", cairn.Invalid("device_guids", fmt.Sprintf("name 1 to %d devices", MaxDevices))
	}
	f, err := s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	guids = dedupe(guids)
	if bad, err := s.outside(ctx, scope, guids); err != nil {
		return "", err
	} else if bad != "" {
		return "", cairn.Invalid("device_guids", "unknown device "+bad)
	}
	runID, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	run, err := s.createRun(ctx, f, cairn.RunID(runID.String()), nil, nil, guids, actor, tr)
	if err != nil {
		return "", err
	}
	if err := s.starter.StartFlow(ctx, run.RunID); err != nil {
		return "", err
	}
	return string(run.RunID), nil
}

// CreateRun records a run of f on guids with every step pending. With
// scheduledFor set (a scheduled job's fire) it is idempotent and returns
// the run that fire already made.
func (s *Service) CreateRun(ctx context.Context, f Flow, runID cairn.RunID, jobID *int64, scheduledFor *time.Time, guids []string, actor string) (Run, error) {
	return s.createRun(ctx, f, runID, jobID, scheduledFor, guids, actor, trigger{})
}

func (s *Service) createRun(ctx context.Context, f Flow, runID cairn.RunID, jobID *int64, scheduledFor *time.Time, guids []string, actor string, tr trigger) (Run, error) {
	steps := make([]StepRun, len(f.Steps))
	for i, st := range f.Steps {
		steps[i] = StepRun{StepID: st.ID, Status: StatusPending}
	}
	raw, err := json.Marshal(steps)
	if err != nil {
		return Run{}, err
	}
	if guids == nil {
		guids = []string{}
	}
	row, err := s.store.AutomationWorkflowRunInsert(ctx, db.AutomationWorkflowRunInsertParams{ID: runID, WorkflowID: f.ID,
		ScheduledJobID: jobID, Steps: raw, DeviceGuids: guids, RequestedBy: actor, ScheduledFor: scheduledFor,
		Input: tr.input, WebhookID: tr.webhookID})
	if err != nil {
		return Run{}, err
	}
	return decodeRun(row)
}

// GetRun returns a flow run inside scope: a scoped operator sees a run
// only when its devices lie inside its sites.
func (s *Service) GetRun(ctx context.Context, scope cairn.SiteScope, runID cairn.RunID) (Run, error) {
	row, err := s.store.AutomationWorkflowRunGet(ctx, runID)
	if err != nil {
		return Run{}, db.NotFound(err, "workflow run not found")
	}
	run, err := decodeRun(row)
	if err != nil {
		return Run{}, err
	}
	ok, err := s.inScope(ctx, scope, run)
	if err != nil {
		return Run{}, err
	}
	if !ok {
		return Run{}, cairn.Errorf(cairn.ECodeNotFound, "workflow run not found")
	}
	return run, nil
}

func (s *Service) inScope(ctx context.Context, scope cairn.SiteScope, run Run) (bool, error) {
	if scope.All || len(run.DeviceGUIDs) == 0 {
		return true, nil
	}
	rows, err := s.store.DeviceSitesByGUIDs(ctx, run.DeviceGUIDs)
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if !scope.Allows(r.SiteID) {
			return false, nil
		}
	}
	return true, nil
}

// Runs lists a flow's runs, newest first.
func (s *Service) Runs(ctx context.Context, scope cairn.SiteScope, id int64, limit int) ([]Run, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	rows, err := s.store.AutomationWorkflowRunList(ctx, db.AutomationWorkflowRunListParams{WorkflowID: id, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Run, 0, len(rows))
	for _, r := range rows {
		run, err := decodeRun(r)
		if err != nil {
			return nil, err
		}
		if ok, err := s.inScope(ctx, scope, run); err != nil {
			return nil, err
		} else if ok {
			out = append(out, run)
		}
	}
	return out, nil
}

// SaveRun records a run's status and steps.
func (s *Service) SaveRun(ctx context.Context, run Run) error {
	raw, err := json.Marshal(run.Steps)
	if err != nil {
		return err
	}
	return s.store.AutomationWorkflowRunUpdate(ctx, db.AutomationWorkflowRunUpdateParams{ID: run.RunID, Status: run.Status, Steps: raw})
}

func (s *Service) check(ctx context.Context, in Input) (Input, []byte, error) {
	var v cairn.Validation
	in.Name, in.Description = strings.TrimSpace(in.Name), strings.TrimSpace(in.Description)
	if n := len([]rune(in.Name)); n == 0 || n > MaxName {
		v.Add("name", fmt.Sprintf("must be 1 to %d characters", MaxName))
	}
	if len([]rune(in.Description)) > 2000 {
		v.Add("description", "at most 2000 characters")
	}
	if len(in.Steps) == 0 || len(in.Steps) > MaxSteps {
		v.Add("steps", fmt.Sprintf("must hold 1 to %d steps", MaxSteps))
	}
	seen := map[string]bool{}
	for i := range in.Steps {
		st := &in.Steps[i]
		f := fmt.Sprintf("steps[%d]", i)
		st.Name = strings.TrimSpace(st.Name)
		if st.ID == "" {
			st.ID = fmt.Sprintf("s%d", i+1)
		}
		if !stepIDPattern.MatchString(st.ID) {
			v.Add(f+".id", "must be 1 to 40 letters, digits, _ or -")
		} else if seen[st.ID] {
			v.Add(f+".id", "must be unique in the workflow")
		}
		seen[st.ID] = true
		if len([]rune(st.Name)) > MaxName {
			v.Add(f+".name", fmt.Sprintf("at most %d characters", MaxName))
		}
		if st.Condition == "" {
			st.Condition = CondAlways
		}
		if st.Condition != CondAlways && st.Condition != CondOnSuccess && st.Condition != CondOnFailure {
			v.Add(f+".condition", "must be always, on_success or on_failure")
		}
		if st.TimeoutSeconds < 0 || st.TimeoutSeconds > MaxTimeout {
			v.Add(f+".timeout_seconds", fmt.Sprintf("must be 1 to %d, or 0 for the assembly's own", MaxTimeout))
		}
		if st.Parameters == nil {
			st.Parameters = map[string]any{}
		}
		if st.AssemblyVersion < 0 {
			v.Add(f+".assembly_version", "must be a version of the assembly, or 0 for its current one")
			continue
		}
		a, err := s.store.AssemblyGet(ctx, db.AssemblyGetParams{ID: st.AssemblyID, Version: int32(st.AssemblyVersion)})
		switch {
		case db.IsNoRows(err) && st.AssemblyVersion > 0:
			if _, err := s.store.ScheduledJobAssembly(ctx, st.AssemblyID); err == nil {
				v.Add(f+".assembly_version", "the assembly has no such version")
			} else {
				v.Add(f+".assembly_id", "no such assembly")
			}
		case db.IsNoRows(err):
			v.Add(f+".assembly_id", "no such assembly")
		case err != nil:
			return in, nil, err
		case a.Kind != "script":
			v.Add(f+".assembly_id", "must be a script assembly")
		case st.AssemblySHA256 != "" && !strings.EqualFold(st.AssemblySHA256, hex.EncodeToString(a.BodySha256)):
			v.Add(f+".assembly_sha256", fmt.Sprintf("does not match version %d of the assembly", a.Version))
		default:
			// The pin: the version chosen now and its body's hash.
			st.AssemblyVersion, st.AssemblySHA256 = int(a.Version), hex.EncodeToString(a.BodySha256)
		}
	}
	if err := v.Err(); err != nil {
		return in, nil, err
	}
	raw, err := json.Marshal(in.Steps)
	return in, raw, err
}

func nameTaken(err error) error {
	if db.IsUniqueViolation(err, "automation_workflows_name_idx") {
		return cairn.Invalid("name", "is already taken")
	}
	return err
}

func decode(r db.AutomationWorkflow) (Flow, error) {
	f := Flow{ID: r.ID, Name: r.Name, Description: r.Description, OwnerUserID: r.OwnerUserID, SiteScope: r.SiteScope,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal(r.Steps, &f.Steps); err != nil {
		return Flow{}, fmt.Errorf("workflow %d steps: %w", r.ID, err)
	}
	return f, nil
}

func decodeRun(r db.AutomationWorkflowRun) (Run, error) {
	run := Run{RunID: r.ID, WorkflowID: r.WorkflowID, ScheduledJobID: r.ScheduledJobID, Status: r.Status, DeviceGUIDs: r.DeviceGuids,
		RequestedBy: r.RequestedBy, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, Input: r.Input, WebhookID: r.WebhookID}
	if err := json.Unmarshal(r.Steps, &run.Steps); err != nil {
		return Run{}, fmt.Errorf("workflow run %s steps: %w", r.ID, err)
	}
	return run, nil
}

func dedupe(in []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, x := range in {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// Next decides a step's fate from the previous step's status ("" for the
// first step): run it, or skip it.
func Next(cond, previous string) bool {
	switch {
	case previous == "":
		return true
	case cond == CondOnSuccess:
		return previous == StatusSucceeded
	case cond == CondOnFailure:
		return previous == StatusFailed
	default:
		return true
	}
}
