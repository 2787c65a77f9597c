package activities

import (
	"context"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// PatchInstalls records what a device's patch lane (workflows.PatchLane)
// does with each install; the agent's progress arrives through the
// callback route.
type PatchInstalls struct {
	Patches *patches.Service
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

// PatchPolicies evaluates patch policies on their Schedule (maintenance
// job workflows.JobPatchPolicies).
type PatchPolicies struct {
	Patches *patches.Service
	Lanes   PatchLaneEnqueuer
}

// PatchPolicyActor is who the scheduled evaluation's installs are
// requested by (their grants' actor).
const PatchPolicyActor = "system:patch-policy"

// EvaluatePatchPolicies evaluates every enabled policy over the fleet and
// hands the installs it creates to their lanes; it returns how many it
// created. An install its lane did not take is finished as failed
// (Patches.EnqueueAll), so the retry re-reads the fleet and asks for it
// afresh; an install already open is not asked for again.
func (a *PatchPolicies) EvaluatePatchPolicies(ctx context.Context) (int64, error) {
	res, queued, err := a.Patches.Evaluate(ctx, cairn.AllSites, PatchPolicyActor, 0)
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
