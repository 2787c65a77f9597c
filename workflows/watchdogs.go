package workflows

import (
	"fmt"
	"github.com/cairn-rmm/cairn"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
)

// JobWatchdogs evaluates every watchdog whose interval has passed.
const JobWatchdogs = "watchdogs"

// WatchdogEvaluateWorkflowID names the evaluation a save of a watchdog's
// revision asks for: one per revision, so a repeated request is the same.
func WatchdogEvaluateWorkflowID(watchdogID, revision int64) string {
	return fmt.Sprintf("watchdog-evaluate:%d:%d", watchdogID, revision)
}

// IncidentWorkflowID names an incident's workflow (issue 25): one per
// opening, so its actions run at most once.
func IncidentWorkflowID(incidentID int64) string { return fmt.Sprintf("incident:%d", incidentID) }

// Incident workflow messages.
const (
	// SignalIncidentEnded: the evaluator resolved or purged the incident.
	SignalIncidentEnded = "incident-ended"
	// UpdateIncidentAcknowledge and UpdateIncidentState are the operator's
	// acknowledge and Open/Suppressed changes while the workflow runs.
	UpdateIncidentAcknowledge = "acknowledge"
	UpdateIncidentState       = "state"
)

// incidentCheck is how often a running incident workflow asks whether its
// incident is still active, should an ended signal have been lost; after
// incidentChecks looks it continues as new (its actions done), so a
// long-open incident's history stays short.
const (
	incidentCheck  = time.Hour
	incidentChecks = 24 * 30
)

// WatchdogEvaluateInput names the watchdog to evaluate now.
type WatchdogEvaluateInput struct {
	WatchdogID int64
}

// WatchdogEvaluate evaluates one watchdog at once (a save makes it live):
// the activity opens and resolves incidents in batches and starts or ends
// their workflows.
func WatchdogEvaluate(ctx workflow.Context, in WatchdogEvaluateInput) (activities.EvaluateResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: 10},
	})
	var w *activities.Watchdogs
	var res activities.EvaluateResult
	err := workflow.ExecuteActivity(ctx, w.EvaluateWatchdog, in.WatchdogID).Get(ctx, &res)
	return res, err
}

// IncidentInput names the incident. Acted: its actions ran already (a
// run continued as new only waits for the end).
type IncidentInput struct {
	IncidentID int64
	Acted      bool `json:",omitempty"`
}

// IncidentResult is how the workflow ended.
type IncidentResult struct {
	Outcomes []watchdogs.Outcome
}

// WatchdogIncident runs an incident's actions once (track, toast, service
// control through DeviceOperation), takes the operator's acknowledge and
// state changes as Updates while it runs, and ends when the evaluator
// resolves or purges the incident.
func WatchdogIncident(ctx workflow.Context, in IncidentInput) (IncidentResult, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			MaximumAttempts: 20},
	})
	var w *activities.Watchdogs
	ended := false
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateIncidentAcknowledge,
		func(ctx workflow.Context, c activities.IncidentChange) (activities.IncidentView, error) {
			var v activities.IncidentView
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
				RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5}}), w.AcknowledgeIncident, c).Get(ctx, &v)
			return v, err
		}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context, activities.IncidentChange) error {
			if ended {
				return temporal.NewApplicationError("the incident has ended", "IncidentEnded")
			}
			return nil
		}}); err != nil {
		return IncidentResult{}, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateIncidentState,
		func(ctx workflow.Context, c activities.IncidentChange) (activities.IncidentView, error) {
			var v activities.IncidentView
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second,
				RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5}}), w.SetIncidentState, c).Get(ctx, &v)
			return v, err
		}, workflow.UpdateHandlerOptions{Validator: func(workflow.Context, activities.IncidentChange) error {
			if ended {
				return temporal.NewApplicationError("the incident has ended", "IncidentEnded")
			}
			return nil
		}}); err != nil {
		return IncidentResult{}, err
	}
	signals := workflow.GetSignalChannel(ctx, SignalIncidentEnded)
	workflow.Go(ctx, func(ctx workflow.Context) {
		signals.Receive(ctx, nil)
		ended = true
	})

	var plan activities.IncidentPlan
	if err := workflow.ExecuteActivity(actx, w.PlanIncident, in.IncidentID).Get(ctx, &plan); err != nil {
		return IncidentResult{}, err
	}
	var res IncidentResult
	for i, a := range plan.Actions {
		if ended || !plan.Active || in.Acted {
			break
		}
		o := watchdogs.Outcome{Action: i, Type: a.Type, Status: "succeeded"}
		switch a.Type {
		case watchdogs.ActionTrack:
			o.Message = "tracked"
		case watchdogs.ActionToast:
			if err := workflow.ExecuteActivity(actx, w.ToastIncident, in.IncidentID).Get(ctx, nil); err != nil {
				o.Status, o.Message = "failed", err.Error()
			}
		case watchdogs.ActionServiceControl:
			o.Status, o.Message = serviceControl(ctx, actx, in.IncidentID, i)
		}
		o.At = workflow.Now(ctx)
		if err := workflow.ExecuteActivity(actx, w.RecordIncidentOutcome, activities.OutcomeInput{IncidentID: in.IncidentID,
			Outcome: o}).Get(ctx, nil); err != nil {
			return res, err
		}
		res.Outcomes = append(res.Outcomes, o)
	}

	for checks := 0; !ended && plan.Active; checks++ {
		if checks == incidentChecks {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return res, err
			}
			return res, workflow.NewContinueAsNewError(ctx, WatchdogIncident, IncidentInput{IncidentID: in.IncidentID, Acted: true})
		}
		ok, err := workflow.AwaitWithTimeout(ctx, incidentCheck, func() bool { return ended })
		if err != nil {
			return res, err
		}
		if !ok {
			var p activities.IncidentPlan
			if err := workflow.ExecuteActivity(actx, w.PlanIncident, in.IncidentID).Get(ctx, &p); err != nil {
				return res, err
			}
			plan.Active = p.Active
		}
	}
	ended = true
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return res, err
	}
	return res, nil
}

// serviceControl runs a service_control action through the command path:
// an activity grants the operation (as the watchdog), and DeviceOperation
// runs it on the device's site queue under an ID fixed by the incident and
// the action, so a replay or a retried start cannot send it twice.
func serviceControl(ctx, actx workflow.Context, incidentID int64, action int) (status, message string) {
	var w *activities.Watchdogs
	var op activities.IncidentOperation
	if err := workflow.ExecuteActivity(actx, w.GrantIncidentOperation, activities.IncidentActionRef{IncidentID: incidentID,
		Action: action}).Get(ctx, &op); err != nil {
		return "failed", err.Error()
	}
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            OperationWorkflowID(op.Target.GUID, cairn.OperationID(op.OperationID)),
		TaskQueue:             SiteTaskQueue(op.Target.SiteSlug),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
	})
	var res OperationResult
	err := workflow.ExecuteChildWorkflow(cctx, DeviceOperation, OperationInput{OperationID: cairn.OperationID(op.OperationID), Target: op.Target,
		Type: op.Type, Payload: op.Payload, Kind: op.Kind, Summary: op.Summary, Actor: op.Actor, Grant: op.Grant}).Get(ctx, &res)
	if err != nil {
		return "failed", err.Error()
	}
	return "succeeded", res.Summary
}
