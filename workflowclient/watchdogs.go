package workflowclient

import (
	"context"
	"errors"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
	"github.com/cairn-rmm/cairn/workflows"
)

// WatchdogStarter starts watchdog evaluations and incident workflows, and
// hands operators' incident changes to a running incident workflow.
type WatchdogStarter struct {
	Client    client.Client
	TaskQueue string
	// Prefix prefixes the workflow IDs ("" in a deployment: incident:<id>);
	// tests sharing one Temporal server give each database its own.
	Prefix string
	// Watchdogs applies a change itself when no incident workflow runs
	// (the incident's watchdog has no actions pending, or it ended).
	Watchdogs *watchdogs.Service
}

// Evaluate starts the evaluation a save of w asks for (one per revision).
func (s WatchdogStarter) Evaluate(ctx context.Context, w watchdogs.Watchdog) error {
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID: s.Prefix + workflows.WatchdogEvaluateWorkflowID(w.ID, w.Revision), TaskQueue: s.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.WatchdogEvaluate, workflows.WatchdogEvaluateInput{WatchdogID: w.ID})
	return err
}

// StartIncident starts an opened incident's workflow; a second start of
// the same incident (even after the first ended) does nothing.
func (s WatchdogStarter) StartIncident(ctx context.Context, incidentID int64) error {
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID: s.Prefix + workflows.IncidentWorkflowID(incidentID), TaskQueue: s.TaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: incidentID})
	return err
}

// EndIncident tells an incident's workflow its incident was resolved or
// purged.
func (s WatchdogStarter) EndIncident(ctx context.Context, incidentID int64) error {
	return Signal(ctx, s.Client, s.Prefix+workflows.IncidentWorkflowID(incidentID), workflows.SignalIncidentEnded, nil)
}

// Acknowledge records an operator's ownership of an incident: through its
// workflow's Update while it runs (so it is ordered with the workflow's
// own steps), directly otherwise.
func (s WatchdogStarter) Acknowledge(ctx context.Context, c activities.IncidentChange) (db.WatchdogIncident, error) {
	return s.change(ctx, workflows.UpdateIncidentAcknowledge, c, func() (db.WatchdogIncident, error) {
		return s.Watchdogs.Acknowledge(ctx, c.Scope, c.Actor, c.IncidentID)
	})
}

// SetState moves an incident between Open and Suppressed, like Acknowledge.
func (s WatchdogStarter) SetState(ctx context.Context, c activities.IncidentChange) (db.WatchdogIncident, error) {
	return s.change(ctx, workflows.UpdateIncidentState, c, func() (db.WatchdogIncident, error) {
		return s.Watchdogs.SetState(ctx, c.Scope, c.Actor, c.IncidentID, c.State, c.Reason)
	})
}

func (s WatchdogStarter) change(ctx context.Context, update string, c activities.IncidentChange,
	direct func() (db.WatchdogIncident, error)) (db.WatchdogIncident, error) {
	var view activities.IncidentView
	err := retry(ctx, func(actx context.Context) error {
		h, err := s.Client.UpdateWorkflow(actx, client.UpdateWorkflowOptions{
			WorkflowID: s.Prefix + workflows.IncidentWorkflowID(c.IncidentID), UpdateName: update,
			Args: []any{c}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return err
		}
		return h.Get(actx, &view)
	})
	var nf *serviceerror.NotFound
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return view.Incident, nil
	case errors.As(err, &nf), errors.As(err, &app) && app.Type() == "IncidentEnded":
		// No workflow runs for the incident: the change is the domain's alone.
		return direct()
	case errors.As(err, &app) && app.Type() != "":
		e := cairn.Errorf(app.Type(), "%s", app.Message())
		if app.Type() == cairn.ECodeValidation {
			// The domain's field is lost in the workflow's failure; the
			// one field a change validates is its reason.
			return db.WatchdogIncident{}, cairn.Invalid("reason", "is required to suppress an incident")
		}
		return db.WatchdogIncident{}, e
	}
	return db.WatchdogIncident{}, err
}
