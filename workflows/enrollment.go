package workflows

import (
	"fmt"
	"time"

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
	// UpdateEnrollmentDecide takes an operator's EnrollmentDecision and
	// returns the EnrollmentResult once it is recorded.
	UpdateEnrollmentDecide = "decide"
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
	// Admin says the actor is an administrator: only an administrator's
	// approval readmits a revoked, quarantined or purged key. Histories
	// from before the field decode it as false.
	Admin bool
}

// EnrollmentResult is how the approval ended.
type EnrollmentResult struct {
	Status string
	Actor  string
	Admin  bool
}

// EnrollmentApproval waits for an operator's decision (the decide update,
// or the enrollment-decision signal older Engines send), or for the
// request to expire, and records the outcome. Decisions that are neither
// approve nor deny are ignored (the update's validator rejects them), so
// a bad client cannot end it; the first decision wins. The decide update
// returns the outcome once it is recorded, so the approval route answers
// from the workflow instead of polling the database.
//
// Taking decisions as updates added no command: an update handler only
// feeds the same selector a signal does, so histories recorded before it
// replay unchanged (testdata/enrollment_*_v0.json) and no
// workflow.GetVersion branch is needed. Any change that adds, removes or
// reorders commands must add one.
func EnrollmentApproval(ctx workflow.Context, in EnrollmentInput) (EnrollmentResult, error) {
	status := proto.ApprovalPending
	if err := workflow.SetQueryHandler(ctx, QueryEnrollmentStatus, func() (string, error) { return status, nil }); err != nil {
		return EnrollmentResult{}, err
	}
	var (
		result   EnrollmentResult // the decision, once there is one
		queued   bool             // an update's decision waits in updates
		done     bool             // the outcome is recorded (or failed)
		outcome  EnrollmentResult
		failure  error
		updates  = workflow.NewBufferedChannel(ctx, 1)
		decision = func(d EnrollmentDecision) (EnrollmentResult, bool) {
			switch d.Decision {
			case DecisionApprove:
				return EnrollmentResult{Status: proto.ApprovalApproved, Actor: d.Actor, Admin: d.Admin}, true
			case DecisionDeny:
				return EnrollmentResult{Status: proto.ApprovalDenied, Actor: d.Actor}, true
			}
			return EnrollmentResult{}, false
		}
	)
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateEnrollmentDecide,
		func(ctx workflow.Context, d EnrollmentDecision) (EnrollmentResult, error) {
			if result.Status == "" && !queued {
				queued = true
				updates.SendAsync(d)
			}
			if err := workflow.Await(ctx, func() bool { return done }); err != nil {
				return EnrollmentResult{}, err
			}
			return outcome, failure
		},
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, d EnrollmentDecision) error {
			if _, ok := decision(d); !ok {
				return fmt.Errorf("unknown enrollment decision %q", d.Decision)
			}
			return nil
		}},
	)
	if err != nil {
		return EnrollmentResult{}, err
	}
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	expiry := workflow.NewTimer(timerCtx, in.ExpiresAt.Sub(workflow.Now(ctx)))
	signals := workflow.GetSignalChannel(ctx, SignalEnrollmentDecision)

	for result.Status == "" {
		sel := workflow.NewSelector(ctx)
		receive := func(c workflow.ReceiveChannel, _ bool) {
			var d EnrollmentDecision
			c.Receive(ctx, &d)
			if r, ok := decision(d); ok {
				result = r
			} else {
				workflow.GetLogger(ctx).Warn("ignoring unknown enrollment decision", "decision", d.Decision)
			}
		}
		sel.AddReceive(signals, receive)
		sel.AddReceive(updates, receive)
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
	err = workflow.ExecuteActivity(actx, a.DecideApproval, activities.DecideInput{
		ApprovalID: in.ApprovalID, Status: result.Status, Actor: result.Actor, Admin: result.Admin,
	}).Get(ctx, &final)
	if err == nil {
		status = final
		result.Status = final
		outcome = result
	}
	done, failure = true, err
	// Let waiting decide updates answer before the workflow closes.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return EnrollmentResult{}, err
	}
	if failure != nil {
		return EnrollmentResult{}, failure
	}
	return result, nil
}
