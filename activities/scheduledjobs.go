package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// ScheduledJobs prepares the fires of scheduled jobs, runs the steps of
// flows (/api/workflows) and hands out the site-worker lane slots their
// runs hold.
type ScheduledJobs struct {
	Jobs  *scheduledjobs.Service
	Slots *scheduledjobs.Slots
	Flows *flows.Service
	// Runs creates job runs (nil: this build has no run creator).
	Runs scheduledjobs.RunCreator
	// Updates and UpdateStarter request and start agent_maintenance
	// jobs' updates (nil: such jobs are unavailable).
	Updates       *agentupdates.Service
	UpdateStarter UpdateStarter
	// Schedules reconciles scheduled jobs' Temporal Schedules with
	// PostgreSQL (the Engine).
	Schedules JobScheduleReconciler
}

// UpdateStarter starts one device's AgentUpdate workflow
// (workflowclient.AgentUpdateStarter).
type UpdateStarter interface {
	Start(ctx context.Context, p agentupdates.Planned) error
}

// Run kinds this file creates (job_runs.kind).
const (
	RunKindScheduledJob = "scheduled_job"
	RunKindWorkflow     = "workflow"
)

// FireInput is one fire to prepare.
type FireInput struct {
	JobID        int64
	RunID        cairn.RunID
	Trigger      string
	Actor        string
	ScheduledFor *time.Time
}

// PrepareFire resolves the job's targets and creates its run: a job run
// for a script job, a flow run for a workflow job. A schedule fire's run
// is keyed by its fire time, so however often this is retried, or the
// fire started again, it makes one run.
func (a *ScheduledJobs) PrepareFire(ctx context.Context, in FireInput) (scheduledjobs.FirePlan, error) {
	plan, job, res, err := a.Jobs.Prepare(ctx, in.JobID, in.Trigger)
	if err != nil || plan.Skip != "" {
		return plan, ApplicationError(err)
	}
	switch job.Kind {
	case scheduledjobs.KindScript:
		if a.Runs == nil {
			return plan, ApplicationError(notInBuild("script runs"))
		}
		plan.RunID, err = a.Runs.CreateJobRun(ctx, scheduledjobs.RunRequest{RunID: in.RunID, Kind: RunKindScheduledJob, Job: job,
			Trigger: in.Trigger, Actor: in.Actor, ScheduledFor: in.ScheduledFor, Targets: res.Targets})
		if cairn.ErrorCode(err) == cairn.ECodeAegisLocked {
			// Each fire signs payloads bound to its devices and run
			// (issue 21 item 4), which needs the master cipher: the
			// fire waits for an unlock, retried by its workflow.
			return plan, temporal.NewApplicationError("the fire waits for the master cipher to be unlocked to sign its payloads",
				cairn.ECodeAegisLocked)
		}
	case scheduledjobs.KindWorkflow:
		plan.RunID, err = a.createFlowRun(ctx, job, in, res)
	case scheduledjobs.KindAgentMaintenance:
		if a.Updates == nil || a.UpdateStarter == nil {
			return plan, ApplicationError(notInBuild("agent updates"))
		}
		// The run is made by RequestAgentMaintenance once the fire holds
		// its slots; its ID is fixed here, from the fire time.
		plan.RunID = cairn.RunID(maintenanceRunID(job.ID, in))
	case scheduledjobs.KindPatchInstall:
		// The run and its installs are made by StartPatchRun once the
		// fire holds its slots; its ID is fixed here, from the fire time.
		plan.RunID = cairn.RunID(maintenanceRunID(job.ID, in))
	default:
		err = cairn.Errorf(cairn.ECodeInternal, "%s jobs do not run from a schedule in this Engine", job.Kind)
	}
	return plan, ApplicationError(err)
}

// notInBuild answers an activity whose dependency this Engine was built
// without: a fault of the build, not a passing condition, so it is
// internal (final) rather than unavailable (which is retried).
func notInBuild(what string) error {
	return cairn.Errorf(cairn.ECodeInternal, "%s are not available in this Engine", what)
}

// maintenanceRunID is an agent_maintenance fire's run ID: the rerun's, or
// derived from the job and fire time so every try of one fire names one
// run.
func maintenanceRunID(jobID int64, in FireInput) string {
	if in.RunID != "" || in.ScheduledFor == nil {
		return string(in.RunID)
	}
	key := fmt.Sprintf("cairn:scheduled-job:%d:%s", jobID, in.ScheduledFor.UTC().Format(time.RFC3339Nano))
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(key)).String()
}

// RequestAgentMaintenance requests an update of each trust-active target
// of an agent_maintenance job as run in.RunID (agentupdates.RequestFor,
// idempotent per run and device) and starts each one's AgentUpdate
// workflow; an update already started is not started again. It reports
// whether a run exists to wait for (false: the job went away or was
// disabled since the fire was prepared).
func (a *ScheduledJobs) RequestAgentMaintenance(ctx context.Context, in FireInput) (bool, error) {
	plan, job, res, err := a.Jobs.Prepare(ctx, in.JobID, in.Trigger)
	if err != nil || plan.Skip != "" {
		return false, ApplicationError(err)
	}
	guids := make([]string, len(res.Targets))
	for i, t := range res.Targets {
		guids[i] = string(t.GUID)
	}
	actor := in.Actor
	if actor == "" {
		actor = "schedule"
	}
	req, err := a.Updates.RequestFor(ctx, cairn.AllSites, actor, guids,
		agentupdates.Job{ScheduledJobID: job.ID, Trigger: in.Trigger, RunID: in.RunID, ScheduledFor: in.ScheduledFor})
	if err != nil {
		return false, ApplicationError(err)
	}
	for _, p := range req.Updates {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if err := a.UpdateStarter.Start(ctx, p); err != nil && !errors.As(err, &started) {
			return false, ApplicationError(err)
		}
	}
	return true, nil
}

func (a *ScheduledJobs) createFlowRun(ctx context.Context, job scheduledjobs.Job, in FireInput, res scheduledjobs.Resolved) (cairn.RunID, error) {
	if job.WorkflowID == nil {
		return "", cairn.Errorf(cairn.ECodeNotFound, "the job names no workflow")
	}
	f, err := a.Flows.Get(ctx, *job.WorkflowID)
	if err != nil {
		return "", err
	}
	runID := in.RunID
	if runID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", err
		}
		runID = cairn.RunID(id.String())
	}
	guids := make([]string, len(res.Targets))
	for i, t := range res.Targets {
		guids[i] = string(t.GUID)
	}
	jobID := job.ID
	run, err := a.Flows.CreateRun(ctx, f, runID, &jobID, in.ScheduledFor, guids, in.Actor)
	return run.RunID, err
}

// SlotInput asks for one lane slot.
type SlotInput struct {
	SiteID cairn.SiteID
	Holder string
	Kind   string
	Lease  time.Duration
}

// ErrTypeLaneFull: the site's scheduled lane is full; the workflow's
// retry policy waits and asks again.
const ErrTypeLaneFull = "lane_full"

// AcquireSlot takes a slot of the site's scheduled lane, or fails with a
// retryable lane_full error while the lane is full.
func (a *ScheduledJobs) AcquireSlot(ctx context.Context, in SlotInput) error {
	ok, err := a.Slots.Acquire(ctx, int64(in.SiteID), in.Holder, in.Kind, in.Lease)
	if err != nil {
		return err
	}
	if !ok {
		return temporal.NewApplicationError("the site's scheduled lane is full", ErrTypeLaneFull)
	}
	return nil
}

// ReleaseSlots frees every slot of holder.
func (a *ScheduledJobs) ReleaseSlots(ctx context.Context, holder string) error {
	return a.Slots.Release(ctx, holder)
}

// FlowPlan is a flow run as its workflow executes it.
type FlowPlan struct {
	Run     flows.Run
	Steps   []flows.Step
	SiteIDs []int64
}

// LoadFlowRun reads a flow run with the steps of its flow, as they are
// when the run starts (later edits do not change a run under way), and
// the sites of its devices.
func (a *ScheduledJobs) LoadFlowRun(ctx context.Context, runID cairn.RunID) (FlowPlan, error) {
	run, err := a.Flows.GetRun(ctx, cairn.AllSites, runID)
	if err != nil {
		return FlowPlan{}, ApplicationError(err)
	}
	f, err := a.Flows.Get(ctx, run.WorkflowID)
	if err != nil {
		return FlowPlan{}, ApplicationError(err)
	}
	res, err := a.Jobs.ResolveDevices(ctx, run.DeviceGUIDs)
	if err != nil {
		return FlowPlan{}, err
	}
	return FlowPlan{Run: run, Steps: f.Steps, SiteIDs: res.SiteIDs}, nil
}

// SaveFlowRun records a flow run's status and steps.
func (a *ScheduledJobs) SaveFlowRun(ctx context.Context, run flows.Run) error {
	return ApplicationError(a.Flows.SaveRun(ctx, run))
}

// StepInput is one step of a flow run to start as a job run.
type StepInput struct {
	RunID  cairn.RunID
	Step   flows.Step
	Run    flows.Run
	StepNo int
}

// CreateStepRun creates the job run of one flow step (ID StepRunID, so a
// retry finds the run it made) on the flow run's devices as they are now.
func (a *ScheduledJobs) CreateStepRun(ctx context.Context, in StepInput) (cairn.RunID, error) {
	if a.Runs == nil {
		return "", ApplicationError(notInBuild("script runs"))
	}
	res, err := a.Jobs.ResolveDevices(ctx, in.Run.DeviceGUIDs)
	if err != nil {
		return "", err
	}
	step, err := a.pinnedStep(ctx, in)
	if err != nil {
		return "", ApplicationError(err)
	}
	// A run a webhook started hands its body's fields to the parameters
	// that name them (flows.ResolveParameters).
	params := flows.ResolveParameters(step.Parameters, in.Run.Input)
	job := scheduledjobs.Job{Kind: scheduledjobs.KindScript, AssemblyID: &step.AssemblyID, Parameters: params,
		Options: scheduledjobs.Options{TimeoutSeconds: step.TimeoutSeconds}}
	if in.Run.ScheduledJobID != nil {
		job.ID = *in.Run.ScheduledJobID
	}
	id, err := a.Runs.CreateJobRun(ctx, scheduledjobs.RunRequest{RunID: in.RunID, Kind: RunKindWorkflow, Job: job,
		Trigger: "workflow", Actor: in.Run.RequestedBy, Targets: res.Targets,
		AssemblyVersion: step.AssemblyVersion, AssemblySHA256: step.AssemblySHA256})
	return id, ApplicationError(err)
}

// pinnedStep is the step to run with its assembly pin. A step without one
// (a run whose plan was loaded before flows pinned versions) takes the pin
// migration 00027 gave the same step of the stored flow; a step that has
// none there either is refused rather than run whatever is current.
func (a *ScheduledJobs) pinnedStep(ctx context.Context, in StepInput) (flows.Step, error) {
	if in.Step.AssemblyVersion > 0 {
		return in.Step, nil
	}
	if f, err := a.Flows.Get(ctx, in.Run.WorkflowID); err == nil {
		for _, st := range f.Steps {
			if st.ID == in.Step.ID && st.AssemblyID == in.Step.AssemblyID && st.AssemblyVersion > 0 {
				step := in.Step
				step.AssemblyVersion, step.AssemblySHA256 = st.AssemblyVersion, st.AssemblySHA256
				return step, nil
			}
		}
	} else if cairn.ErrorCode(err) != cairn.ECodeNotFound {
		return flows.Step{}, err
	}
	return flows.Step{}, cairn.Errorf(cairn.ECodeAssemblyChanged,
		"step %s names no assembly version; save the workflow again to choose one", in.Step.ID)
}

// JobRunStatus reads a job run's status.
func (a *ScheduledJobs) JobRunStatus(ctx context.Context, runID cairn.RunID) (string, error) {
	st, err := a.Jobs.RunStatus(ctx, runID)
	return st, ApplicationError(err)
}

// JobScheduleReconciler makes every scheduled job's Temporal Schedule
// match its row: missing ones created, drifted ones updated, orphans
// deleted (engine.Engine.ReconcileJobSchedules).
type JobScheduleReconciler interface {
	ReconcileJobSchedules(ctx context.Context) error
}

// ReconcileJobSchedules is the maintenance:job-schedules job: it repairs
// a scheduled job whose Schedule was not mirrored after its save.
func (a *ScheduledJobs) ReconcileJobSchedules(ctx context.Context) (int64, error) {
	if a.Schedules == nil {
		return 0, notWired("job schedules")
	}
	return 0, a.Schedules.ReconcileJobSchedules(ctx)
}
