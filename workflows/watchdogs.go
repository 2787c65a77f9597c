package workflows

import (
	"errors"
	"fmt"
	"github.com/cairn-rmm/cairn"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/automation"
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
	// NotifyStep is the next notification step and NotifyAt when it is
	// due (nil: none), carried across a continue-as-new.
	NotifyStep int        `json:",omitempty"`
	NotifyAt   *time.Time `json:",omitempty"`
}

// versionIncidentNotifications marks the incident workflow's notification
// steps (issue 25): histories recorded before them replay without.
const versionIncidentNotifications = "incident-notifications"

// notifyRetry is a notification send's retry policy: backoff from 5 s to
// 5 minutes, 8 attempts (about 15 minutes); a refusal is not retried.
var notifyRetry = &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute,
	MaximumAttempts: 8, NonRetryableErrorTypes: []string{watchdogs.ECodeDeliveryRefused}}

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
		case watchdogs.ActionRunAssembly:
			o.Status, o.Message, o.RunID = runAssembly(ctx, actx, in.IncidentID, i)
		}
		o.At = workflow.Now(ctx)
		if err := workflow.ExecuteActivity(actx, w.RecordIncidentOutcome, activities.OutcomeInput{IncidentID: in.IncidentID,
			Outcome: o}).Get(ctx, nil); err != nil {
			return res, err
		}
		res.Outcomes = append(res.Outcomes, o)
	}

	// Notifications (version 1): a first step at once, then one whenever
	// the previous step said another may be due (a channel's repetition,
	// the end of a maintenance window). Histories recorded before them
	// replay without.
	notifying := workflow.GetVersion(ctx, versionIncidentNotifications, workflow.DefaultVersion, 1) == 1
	step := in.NotifyStep
	var notifyAt time.Time
	if notifying && plan.Active && !ended {
		if !in.Acted {
			notifyAt = workflow.Now(ctx)
		} else if in.NotifyAt != nil {
			notifyAt = *in.NotifyAt
		}
	}
	for checks := 0; !ended && plan.Active; checks++ {
		if checks == incidentChecks {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return res, err
			}
			next := IncidentInput{IncidentID: in.IncidentID, Acted: true}
			if notifying {
				next.NotifyStep = step
				if !notifyAt.IsZero() {
					next.NotifyAt = &notifyAt
				}
			}
			return res, workflow.NewContinueAsNewError(ctx, WatchdogIncident, next)
		}
		if notifying && !notifyAt.IsZero() && !workflow.Now(ctx).Before(notifyAt) {
			np, err := notifyStep(ctx, in.IncidentID, step)
			if err == nil {
				step++
			} else if err != errPlanFailed {
				return res, err
			}
			notifyAt = time.Time{}
			if np.Next > 0 {
				notifyAt = workflow.Now(ctx).Add(np.Next)
			}
			if !np.Active {
				plan.Active = false
				continue
			}
		}
		wait := incidentCheck
		if notifying && !notifyAt.IsZero() {
			wait = min(wait, max(notifyAt.Sub(workflow.Now(ctx)), time.Second))
		}
		ok, err := workflow.AwaitWithTimeout(ctx, wait, func() bool { return ended })
		if err != nil {
			return res, err
		}
		if notifying && !ok && wait < incidentCheck {
			continue // a notification step is due
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

// runAssembly runs a run_assembly action: an activity makes the job run
// (one device, the watchdog's assembly version signed for it) under an ID
// fixed by the device, incident and action, and the JobRun workflow
// executes it as a child under the run's own workflow ID, so a retried
// step or a replay after a kill finds the run rather than start another.
func runAssembly(ctx, actx workflow.Context, incidentID int64, action int) (status, message, runID string) {
	var w *activities.Watchdogs
	var run activities.IncidentRun
	if err := workflow.ExecuteActivity(actx, w.CreateIncidentRun, activities.IncidentActionRef{IncidentID: incidentID,
		Action: action}).Get(ctx, &run); err != nil {
		return "failed", err.Error(), ""
	}
	if !run.Finished {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            automation.JobRunWorkflowID(run.RunID),
			WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			ParentClosePolicy:     enums.PARENT_CLOSE_POLICY_ABANDON,
		})
		if err := workflow.ExecuteChildWorkflow(cctx, JobRun, JobRunInput{RunID: run.RunID}).Get(ctx, nil); err != nil {
			return "failed", err.Error(), string(run.RunID)
		}
	}
	var o watchdogs.Outcome
	if err := workflow.ExecuteActivity(actx, w.IncidentRunOutcome, run.RunID).Get(ctx, &o); err != nil {
		return "failed", err.Error(), string(run.RunID)
	}
	return o.Status, o.Message, string(run.RunID)
}

// notifyRetryPlan is how long after a failed plan its step is tried again.
const notifyRetryPlan = time.Minute

// errPlanFailed: a notification step's plan failed (its retries spent).
var errPlanFailed = errors.New("notification plan failed")

// notifyStep runs one notification step: the plan (routing, repetition,
// maintenance windows), then one send per due channel, in parallel, each
// with its retries. A channel that still fails is left failed (its
// delivery row says why); the step goes on.
func notifyStep(ctx workflow.Context, incidentID int64, step int) (watchdogs.NotifyPlan, error) {
	var w *activities.Watchdogs
	pctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 20}})
	var np watchdogs.NotifyPlan
	if err := workflow.ExecuteActivity(pctx, w.PlanIncidentNotifications, activities.NotifyStepInput{IncidentID: incidentID,
		Step: step}).Get(ctx, &np); err != nil {
		// Notifications never fail the incident: the step is tried again
		// (under the same number) a minute on.
		return watchdogs.NotifyPlan{Active: true, Next: notifyRetryPlan, Channels: nil}, errPlanFailed
	}
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Minute, RetryPolicy: notifyRetry})
	futures := make([]workflow.Future, 0, len(np.Channels))
	for _, ch := range np.Channels {
		futures = append(futures, workflow.ExecuteActivity(sctx, w.DeliverIncidentNotification,
			watchdogs.Delivery{IncidentID: incidentID, Step: step, ChannelID: ch}))
	}
	for _, f := range futures {
		_ = f.Get(ctx, nil) // recorded on the delivery row
	}
	return np, nil
}
