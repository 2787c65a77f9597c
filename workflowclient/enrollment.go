package workflowclient

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/workflows"
)

// EnrollmentStarter starts approval workflows and hands them decisions.
type EnrollmentStarter struct {
	Client client.Client
	// TaskQueue is EngineTaskQueue when empty (tests use their own).
	TaskQueue string
}

func (s EnrollmentStarter) options(approvalID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:                    workflows.EnrollmentWorkflowID(approvalID),
		TaskQueue:             cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		TypedSearchAttributes: jobKindAttr(workflows.JobKindEnrollment),
	}
}

// StartApproval starts the approval of a new pending request.
func (s EnrollmentStarter) StartApproval(ctx context.Context, approvalID string, expiresAt time.Time) error {
	_, err := Start(ctx, s.Client, s.options(approvalID), workflows.EnrollmentApproval,
		workflows.EnrollmentInput{ApprovalID: approvalID, ExpiresAt: expiresAt})
	return err
}

// Decide signals an operator's decision, starting the workflow if it is
// missing (its history was lost), so a pending request can always be
// decided.
func (s EnrollmentStarter) Decide(ctx context.Context, approvalID string, expiresAt time.Time, d workflows.EnrollmentDecision) error {
	_, err := SignalWithStart(ctx, s.Client, s.options(approvalID), workflows.SignalEnrollmentDecision, d,
		workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: approvalID, ExpiresAt: expiresAt})
	return err
}

// DecideAndWait hands an operator's decision to the approval workflow as
// the decide update and returns the recorded outcome. A missing workflow
// (its history was lost) is started first, so a pending request can
// always be decided. When ctx ends before the outcome, the decision is
// also signalled, which is durable at once (the workflow takes the first
// decision only), and ctx's error is returned: the caller answers that
// the request is still pending.
func (s EnrollmentStarter) DecideAndWait(ctx context.Context, approvalID string, expiresAt time.Time, d workflows.EnrollmentDecision) (workflows.EnrollmentResult, error) {
	update := func() (workflows.EnrollmentResult, error) {
		h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: workflows.EnrollmentWorkflowID(approvalID), UpdateName: workflows.UpdateEnrollmentDecide,
			Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return workflows.EnrollmentResult{}, err
		}
		var res workflows.EnrollmentResult
		return res, h.Get(ctx, &res)
	}
	res, err := update()
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) && ctx.Err() == nil {
		if err := s.StartApproval(ctx, approvalID, expiresAt); err != nil {
			return workflows.EnrollmentResult{}, err
		}
		res, err = update()
	}
	if err != nil && ctx.Err() != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if serr := s.Decide(sctx, approvalID, expiresAt, d); serr != nil {
			return workflows.EnrollmentResult{}, errors.Join(ctx.Err(), serr)
		}
		return workflows.EnrollmentResult{}, ctx.Err()
	}
	return res, err
}
