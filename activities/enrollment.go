package activities

import (
	"context"

	"github.com/cairn-rmm/cairn/internal/enrollment"
)

// Enrollment carries the enrollment domain for the approval workflow.
type Enrollment struct {
	Service *enrollment.Service
}

// DecideInput is one decision on an enrollment request.
type DecideInput struct {
	ApprovalID string
	// Status is approved, denied or expired.
	Status string
	Actor  string
	// Admin says an administrator decided (a readmission needs one).
	Admin bool
}

// DecideApproval records the decision and returns the request's status
// afterwards (unchanged when it was no longer pending).
func (e *Enrollment) DecideApproval(ctx context.Context, in DecideInput) (string, error) {
	row, err := e.Service.Decide(ctx, in.ApprovalID, in.Status, in.Actor, in.Admin)
	if err != nil {
		return "", err
	}
	return row.Status, nil
}
