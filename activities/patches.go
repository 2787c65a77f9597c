package activities

import (
	"context"

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
