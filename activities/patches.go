package activities

import (
	"context"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

// PatchInstalls records what a device's patch lane (workflows.PatchLane)
// does with each install; the agent's progress arrives through the
// callback route.
type PatchInstalls struct {
	Patches *patches.Service
	// Jobs and Lanes run patch_install jobs' fires: the job's targets
	// resolved, its installs handed to the lanes.
	Jobs  *scheduledjobs.Service
	Lanes PatchLaneEnqueuer
}

// StartPatchRun makes a patch_install job's run (once per run ID:
// patches.CreateRun) and hands its installs still queued, and the reboots
// after them, to the devices' lanes; the fire calls it once it holds its
// sites' lane slots. It reports whether there is a run to wait for
// (false: the job went away or was disabled since the fire was prepared).
// Handing an order twice (a retried activity) is harmless: a lane skips
// an order that is no longer open.
func (a *PatchInstalls) StartPatchRun(ctx context.Context, in FireInput) (bool, error) {
	defer heartbeatWhileRunning(ctx)()
	if a.Jobs == nil || a.Lanes == nil {
		return false, ApplicationError(notInBuild("patch install jobs"))
	}
	plan, job, res, err := a.Jobs.Prepare(ctx, in.JobID, in.Trigger)
	if err != nil || plan.Skip != "" {
		return false, ApplicationError(err)
	}
	actor := in.Actor
	if actor == "" {
		actor = job.UpdatedBy
	}
	if actor == "" {
		actor = "schedule"
	}
	var v cairn.Validation
	keys := patches.JobPatchKeys(job.Parameters, &v, "parameters.patch_keys")
	if err := v.Err(); err != nil {
		return false, ApplicationError(err)
	}
	targets := make([]patches.RunTarget, len(res.Targets))
	for i, t := range res.Targets {
		targets[i] = patches.RunTarget{GUID: t.GUID, Hostname: t.Hostname, SiteID: t.SiteID, SiteSlug: t.SiteSlug}
	}
	if _, err := a.Patches.CreateRun(ctx, patches.RunRequest{RunID: in.RunID, JobID: job.ID, Trigger: in.Trigger, Actor: actor,
		ScheduledFor: in.ScheduledFor, Targets: targets, PatchKeys: keys}); err != nil {
		return false, ApplicationError(err)
	}
	queued, err := a.Patches.RunQueue(ctx, in.RunID)
	if err != nil {
		return false, ApplicationError(err)
	}
	for _, q := range queued {
		if err := EnqueueQueued(ctx, a.Lanes, q, actor); err != nil {
			return false, ApplicationError(err)
		}
	}
	return true, nil
}

// SettlePatchRun records the parts of a patch_install run whose installs
// ended, and the run once all have; it returns how many installs are
// still open.
func (a *PatchInstalls) SettlePatchRun(ctx context.Context, runID cairn.RunID) (int, error) {
	defer heartbeatWhileRunning(ctx)()
	n, err := a.Patches.SettleRun(ctx, runID)
	return n, ApplicationError(err)
}

// PatchInstallBegun is an install as its lane reaches it: Run is false
// when it has already finished (an order delivered twice).
type PatchInstallBegun struct {
	Install patches.Install
	Run     bool
}

// BeginPatchInstall marks the install running.
func (a *PatchInstalls) BeginPatchInstall(ctx context.Context, installID string) (PatchInstallBegun, error) {
	inst, run, err := a.Patches.Begin(ctx, installID)
	if err != nil {
		return PatchInstallBegun{}, ApplicationError(err)
	}
	return PatchInstallBegun{Install: inst, Run: run}, nil
}

// ConcludePatchInput is one attempt's outcome.
type ConcludePatchInput struct {
	InstallID string
	Outcome   patches.Outcome
}

// ConcludePatchInstall records the outcome against the re-scan and
// returns the install's final state.
func (a *PatchInstalls) ConcludePatchInstall(ctx context.Context, in ConcludePatchInput) (string, error) {
	inst, err := a.Patches.Conclude(ctx, in.InstallID, in.Outcome)
	if err != nil {
		return "", ApplicationError(err)
	}
	return inst.State, nil
}

// BeginPatchReboot marks a reboot running; false when it already
// finished (an order delivered twice).
func (a *PatchInstalls) BeginPatchReboot(ctx context.Context, rebootID string) (bool, error) {
	_, run, err := a.Patches.BeginReboot(ctx, rebootID)
	if err != nil {
		return false, ApplicationError(err)
	}
	return run, nil
}

// ConcludeRebootInput is a reboot's outcome.
type ConcludeRebootInput struct {
	RebootID string
	Outcome  patches.RebootOutcome
}

// ConcludePatchReboot records the agent's answer to a reboot and returns
// the reboot's final state.
func (a *PatchInstalls) ConcludePatchReboot(ctx context.Context, in ConcludeRebootInput) (string, error) {
	rb, err := a.Patches.ConcludeReboot(ctx, in.RebootID, in.Outcome)
	if err != nil {
		return "", ApplicationError(err)
	}
	return rb.State, nil
}

// BeginPatchEnforcement marks an enforcement running; false when it
// already finished (an order delivered twice).
func (a *PatchInstalls) BeginPatchEnforcement(ctx context.Context, enforcementID string) (bool, error) {
	_, run, err := a.Patches.BeginEnforcement(ctx, enforcementID)
	if err != nil {
		return false, ApplicationError(err)
	}
	return run, nil
}

// ConcludeEnforcementInput is an enforcement's outcome.
type ConcludeEnforcementInput struct {
	EnforcementID string
	Outcome       patches.EnforcementOutcome
}

// ConcludePatchEnforcement records the agent's answer to an enforcement
// and returns the enforcement's final state.
func (a *PatchInstalls) ConcludePatchEnforcement(ctx context.Context, in ConcludeEnforcementInput) (string, error) {
	e, err := a.Patches.ConcludeEnforcement(ctx, in.EnforcementID, in.Outcome)
	if err != nil {
		return "", ApplicationError(err)
	}
	return e.State, nil
}

// PatchLaneEnqueuer hands an install to its device's patch lane
// (workflowclient.PatchLaneStarter).
type PatchLaneEnqueuer interface {
	Enqueue(ctx context.Context, inst patches.Install, target patches.Target, actor string) error
	EnqueueReboot(ctx context.Context, rb patches.Reboot, target patches.Target, actor string) error
	EnqueueEnforcement(ctx context.Context, e patches.Enforcement, target patches.Target, actor string) error
}

// EnqueueQueued hands one install, reboot or enforcement an evaluation
// queued to its lane.
func EnqueueQueued(ctx context.Context, lanes PatchLaneEnqueuer, q patches.Queued, actor string) error {
	if q.Enforcement != nil {
		return lanes.EnqueueEnforcement(ctx, *q.Enforcement, q.Target, actor)
	}
	if q.Reboot != nil {
		return lanes.EnqueueReboot(ctx, *q.Reboot, q.Target, actor)
	}
	return lanes.Enqueue(ctx, q.Install, q.Target, actor)
}

// PatchJobFirer fires a scheduled job now as run runID
// (workflowclient.JobScheduler).
type PatchJobFirer interface {
	Start(ctx context.Context, job scheduledjobs.Job, runID cairn.RunID, actor string) error
}

// FirePatchJobs fires the immediate patch_install jobs an evaluation
// created; a run whose fire could not start is abandoned (its installs
// failed, asked for again by the next evaluation).
func FirePatchJobs(ctx context.Context, p *patches.Service, fires PatchJobFirer, jobs []patches.JobStart, actor string) error {
	return p.StartJobs(ctx, jobs, func(ctx context.Context, j patches.JobStart) error {
		return fires.Start(ctx, scheduledjobs.Job{ID: j.JobID, Kind: scheduledjobs.KindPatchInstall}, j.RunID, actor)
	})
}

// PatchPolicies evaluates patch policies on their Schedule (maintenance
// job workflows.JobPatchPolicies).
type PatchPolicies struct {
	Patches *patches.Service
	Lanes   PatchLaneEnqueuer
	// Fires fires the immediate patch_install jobs evaluations create.
	Fires PatchJobFirer
}

// PatchPolicyActor is who the scheduled evaluation's installs are
// requested by (their grants' actor).
const PatchPolicyActor = "system:patch-policy"

// EvaluatePatchPolicies evaluates every enabled policy over the fleet and
// fires the immediate patch_install jobs it creates (each hands its
// installs to the lanes while it holds its sites' lane slots); it returns
// how many installs it created. An install whose job did not fire is
// finished as failed (Patches.StartJobs), so the retry re-reads the fleet
// and asks for it afresh; an install already open is not asked for again.
func (a *PatchPolicies) EvaluatePatchPolicies(ctx context.Context) (int64, error) {
	res, queued, err := a.Patches.Evaluate(ctx, cairn.AllSites, PatchPolicyActor, 0)
	if ferr := FirePatchJobs(ctx, a.Patches, a.Fires, res.Jobs, PatchPolicyActor); ferr != nil {
		return 0, ferr
	}
	if qerr := a.Patches.EnqueueAll(ctx, queued, func(ctx context.Context, q patches.Queued) error {
		return EnqueueQueued(ctx, a.Lanes, q, PatchPolicyActor)
	}); qerr != nil {
		return 0, qerr
	}
	if err != nil {
		return 0, ApplicationError(err)
	}
	return int64(len(res.Installs)), nil
}
