package activities

import (
	"context"

	"github.com/cairn-rmm/cairn/internal/onboarding"
)

// Onboarding records redeploy jobs for their workflow
// (workflows.OnboardingRedeploy).
type Onboarding struct {
	Service *onboarding.Service
}

// OnboardingStatusInput moves a job.
type OnboardingStatusInput struct {
	JobID  string
	Status string
	Error  string
}

// SetOnboardingStatus records a job's status; a finished job stays as it
// is, and one that ends without an enrollment takes its code with it.
func (a *Onboarding) SetOnboardingStatus(ctx context.Context, in OnboardingStatusInput) (string, error) {
	j, err := a.Service.SetStatus(ctx, in.JobID, in.Status, in.Error)
	return j.Status, ApplicationError(err)
}

// OnboardingEnrolled reports whether the job's device has enrolled with
// its code.
func (a *Onboarding) OnboardingEnrolled(ctx context.Context, jobID string) (bool, error) {
	return a.Service.Enrolled(ctx, jobID)
}
