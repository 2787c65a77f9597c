package workflows

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Enrollment approval names.
const (
	// SignalEnrollmentDecision carries an operator's EnrollmentDecision.
	SignalEnrollmentDecision = "enrollment-decision"
	// QueryEnrollmentStatus answers the request's status as the workflow
	// knows it.
	QueryEnrollmentStatus = "status"
	// JobKindEnrollment is the JobKind search attribute of approvals.
	JobKindEnrollment = "enrollment"
)

// Enrollment decisions an operator signals.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// EnrollmentWorkflowID names the approval of one enrollment request.
func EnrollmentWorkflowID(approvalID string) string { return "enrollment:" + approvalID }

// EnrollmentInput starts an approval.
type EnrollmentInput struct {
	ApprovalID string
	ExpiresAt  time.Time
}

// EnrollmentDecision is the signal's payload.
type EnrollmentDecision struct {
	Decision string
	Actor    string
}

// EnrollmentResult is how the approval ended.
type EnrollmentResult struct {
	Status string
	Actor  string
}

// EnrollmentApproval waits for an operator's approve or deny signal, or
// for the request to expire, and records the outcome. Signals that are
// neither approve nor deny are ignored, so a bad client cannot end it.
func EnrollmentApproval(ctx workflow.Context, in EnrollmentInput) (EnrollmentResult, error) {
	status := proto.ApprovalPending
	if err := workflow.SetQueryHandler(ctx, QueryEnrollmentStatus, func() (string, error) { return status, nil }); err != nil {
		return EnrollmentResult{}, err
	}
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	expiry := workflow.NewTimer(timerCtx, in.ExpiresAt.Sub(workflow.Now(ctx)))
	signals := workflow.GetSignalChannel(ctx, SignalEnrollmentDecision)

	var result EnrollmentResult
	for result.Status == "" {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
			var d EnrollmentDecision
			c.Receive(ctx, &d)
			switch d.Decision {
			case DecisionApprove:
				result = EnrollmentResult{Status: proto.ApprovalApproved, Actor: d.Actor}
			case DecisionDeny:
				result = EnrollmentResult{Status: proto.ApprovalDenied, Actor: d.Actor}
			default:
				workflow.GetLogger(ctx).Warn("ignoring unknown enrollment decision", "decision", d.Decision)
			}
		})
		sel.AddFuture(expiry, func(workflow.Future) {
			result = EnrollmentResult{Status: proto.ApprovalExpired, Actor: "expiry"}
		})
		sel.Select(ctx)
	}
	cancelTimer()

	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	var a *activities.Enrollment
	var final string
	err := workflow.ExecuteActivity(actx, a.DecideApproval, activities.DecideInput{
		ApprovalID: in.ApprovalID, Status: result.Status, Actor: result.Actor,
	}).Get(ctx, &final)
	if err != nil {
		return EnrollmentResult{}, err
	}
	status = final
	result.Status = final
	return result, nil
}

// EnrollmentStarter starts and signals approval workflows.
type EnrollmentStarter struct {
	Client client.Client
	// TaskQueue is EngineTaskQueue when empty (tests use their own).
	TaskQueue string
}

func (s EnrollmentStarter) options(approvalID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        EnrollmentWorkflowID(approvalID),
		TaskQueue: cmp.Or(s.TaskQueue, EngineTaskQueue),
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttrJobKind).ValueSet(JobKindEnrollment),
		),
	}
}

// StartApproval starts the approval of a new pending request.
func (s EnrollmentStarter) StartApproval(ctx context.Context, approvalID string, expiresAt time.Time) error {
	_, err := s.Client.ExecuteWorkflow(ctx, s.options(approvalID), EnrollmentApproval,
		EnrollmentInput{ApprovalID: approvalID, ExpiresAt: expiresAt})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil
	}
	return err
}

// Decide signals an operator's decision, starting the workflow if it is
// missing (its history was lost), so a pending request can always be
// decided.
func (s EnrollmentStarter) Decide(ctx context.Context, approvalID string, expiresAt time.Time, d EnrollmentDecision) error {
	_, err := s.Client.SignalWithStartWorkflow(ctx, EnrollmentWorkflowID(approvalID), SignalEnrollmentDecision, d,
		s.options(approvalID), EnrollmentApproval, EnrollmentInput{ApprovalID: approvalID, ExpiresAt: expiresAt})
	return err
}
