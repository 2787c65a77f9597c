package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
)

// IncidentWorkflows starts and ends incidents' workflows
// (workflowclient.WatchdogStarter).
type IncidentWorkflows interface {
	StartIncident(ctx context.Context, incidentID int64) error
	EndIncident(ctx context.Context, incidentID int64) error
}

// Watchdogs are the activities of the watchdogs capability: evaluation
// (on save and on the maintenance schedule) and the incident workflow's
// steps.
type Watchdogs struct {
	Svc       *watchdogs.Service
	Incidents IncidentWorkflows
	Devices   *devices.Service
	Grants    *grants.Service
	// Runs creates the job runs of run_assembly actions.
	Runs *automation.Service
	Log  *slog.Logger
}

// EvaluateResult is what an evaluation changed.
type EvaluateResult struct {
	Evaluated int
	Opened    []int64
	Resolved  []int64
	Purged    []int64
}

// EvaluateWatchdog evaluates one watchdog now.
func (a *Watchdogs) EvaluateWatchdog(ctx context.Context, watchdogID int64) (EvaluateResult, error) {
	res, err := a.Svc.Evaluate(ctx, watchdogID)
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		// Deleted, or saved again since: the later save's evaluation runs.
		return EvaluateResult{}, nil
	}
	if err != nil {
		return EvaluateResult{}, ApplicationError(err)
	}
	return a.follow(ctx, res)
}

// WatchdogMaintenance is the watchdogs maintenance job's activity.
type WatchdogMaintenance struct {
	// Due evaluates what is due (WatchdogDue).
	Due interface {
		Sweep(ctx context.Context) (int64, error)
	}
}

// EvaluateDueWatchdogs is the watchdogs maintenance job: it answers how
// many device evaluations it made.
func (a *WatchdogMaintenance) EvaluateDueWatchdogs(ctx context.Context) (int64, error) {
	if a.Due == nil {
		return 0, notWired("watchdogs")
	}
	return a.Due.Sweep(ctx)
}

// WatchdogDue evaluates every watchdog whose interval has passed, then
// starts the incident workflows an earlier run opened but could not start
// (the process died between the commit and the start).
type WatchdogDue struct {
	W *Watchdogs
}

// Sweep does one maintenance run.
func (d WatchdogDue) Sweep(ctx context.Context) (int64, error) {
	a := d.W
	res, err := a.Svc.EvaluateDue(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := a.follow(ctx, res); err != nil {
		return 0, err
	}
	pending, err := a.Svc.IncidentsWithoutOutcomes(ctx, time.Minute)
	if err != nil {
		return 0, err
	}
	for _, id := range pending {
		if err := a.Incidents.StartIncident(ctx, id); err != nil {
			return 0, err
		}
	}
	return int64(res.Evaluated), nil
}

// follow starts the workflows of opened incidents and ends those of
// resolved and purged ones (each idempotent by workflow ID).
func (a *Watchdogs) follow(ctx context.Context, res watchdogs.Result) (EvaluateResult, error) {
	out := EvaluateResult{Evaluated: res.Evaluated, Opened: res.Opened, Resolved: res.Resolved, Purged: res.Purged}
	for _, id := range res.Opened {
		if err := a.Incidents.StartIncident(ctx, id); err != nil {
			return out, err
		}
	}
	for _, id := range append(append([]int64{}, res.Resolved...), res.Purged...) {
		if err := a.Incidents.EndIncident(ctx, id); err != nil {
			return out, err
		}
	}
	return out, nil
}

// IncidentPlan is what an incident's workflow does.
type IncidentPlan struct {
	// Active: the incident is not resolved (or purged).
	Active  bool
	Actions []watchdogs.Action
}

// PlanIncident reads the incident's actions (its watchdog's, as saved).
func (a *Watchdogs) PlanIncident(ctx context.Context, incidentID int64) (IncidentPlan, error) {
	p, err := a.Svc.IncidentPlan(ctx, incidentID)
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		return IncidentPlan{}, nil
	}
	if err != nil {
		return IncidentPlan{}, ApplicationError(err)
	}
	return IncidentPlan{Active: p.Incident.State != watchdogs.StateResolved, Actions: p.Actions}, nil
}

// ToastIncident sends the incident's toast to the operators of its site.
func (a *Watchdogs) ToastIncident(ctx context.Context, incidentID int64) error {
	return ApplicationError(a.Svc.Toast(ctx, incidentID))
}

// OutcomeInput is one action's outcome.
type OutcomeInput struct {
	IncidentID int64
	Outcome    watchdogs.Outcome
}

// RecordIncidentOutcome records an action's outcome on the incident.
func (a *Watchdogs) RecordIncidentOutcome(ctx context.Context, in OutcomeInput) error {
	err := a.Svc.RecordOutcome(ctx, in.IncidentID, in.Outcome)
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		return nil // purged meanwhile
	}
	return ApplicationError(err)
}

// IncidentActionRef names one action of an incident.
type IncidentActionRef struct {
	IncidentID int64
	Action     int
}

// IncidentOperation is a granted command-path operation for an action.
type IncidentOperation struct {
	OperationID string
	Target      devices.OperationTarget
	Type        string
	Payload     json.RawMessage
	Kind        string
	Summary     string
	Actor       string
	Grant       string
}

// incidentGrantTTL bounds a granted operation: the command path's wait
// plus margin (workflows.DefaultOperationTimeout + 15 minutes).
const incidentGrantTTL = 90*time.Second + 15*time.Minute

// GrantIncidentOperation prepares a service_control action: the device
// (refusing a quarantined or revoked one, or one without a live socket or
// the services capability) and a grant signed for exactly this request,
// whose operation ID is fixed by the incident and the action.
func (a *Watchdogs) GrantIncidentOperation(ctx context.Context, ref IncidentActionRef) (IncidentOperation, error) {
	p, err := a.Svc.IncidentPlan(ctx, ref.IncidentID)
	if err != nil {
		return IncidentOperation{}, ApplicationError(err)
	}
	if ref.Action < 0 || ref.Action >= len(p.Actions) || p.Actions[ref.Action].Type != watchdogs.ActionServiceControl {
		return IncidentOperation{}, ApplicationError(cairn.Errorf(cairn.ECodeValidation, "action %d is not a service control", ref.Action))
	}
	act := p.Actions[ref.Action]
	t, err := a.Devices.OperationTargetByGUID(ctx, cairn.AllSites, cairn.DeviceGUID(p.Incident.DeviceGuid))
	if err != nil {
		return IncidentOperation{}, ApplicationError(err)
	}
	if !t.SocketLive {
		return IncidentOperation{}, ApplicationError(cairn.Errorf(cairn.ECodeAgentSocketMissing,
			"the agent of %s has no realtime connection", t.Hostname))
	}
	if err := t.Require(proto.EventCapability[proto.EventServiceControl]); err != nil {
		return IncidentOperation{}, ApplicationError(err)
	}
	payload, err := json.Marshal(proto.ServiceActionRequest{Name: act.Service, Action: act.ServiceAction})
	if err != nil {
		return IncidentOperation{}, err
	}
	op := IncidentOperation{OperationID: fmt.Sprintf("watchdog-incident-%d-%d", ref.IncidentID, ref.Action), Target: t,
		Type: proto.EventServiceControl, Payload: payload, Kind: "service_" + act.ServiceAction,
		Summary: fmt.Sprintf("Watchdog %q: %s %s", p.WatchdogName, act.ServiceAction, act.Service), Actor: "watchdog"}
	op.Grant, err = a.Grants.Sign(ctx, grants.Operation{GUID: t.GUID, OperationID: cairn.OperationID(op.OperationID), Type: op.Type,
		Payload: payload, Actor: op.Actor}, incidentGrantTTL)
	if err != nil {
		return IncidentOperation{}, ApplicationError(err)
	}
	return op, nil
}

// IncidentChange is an operator's acknowledge or state change, with the
// sites they may see.
type IncidentChange struct {
	IncidentID int64
	Actor      string
	Scope      cairn.SiteScope
	State      string
	Reason     string
}

// IncidentView is the incident after a change.
type IncidentView struct {
	Incident db.WatchdogIncident
}

// AcknowledgeIncident records the operator's ownership.
func (a *Watchdogs) AcknowledgeIncident(ctx context.Context, c IncidentChange) (IncidentView, error) {
	inc, err := a.Svc.Acknowledge(ctx, c.Scope, c.Actor, c.IncidentID)
	return IncidentView{Incident: inc}, ApplicationError(err)
}

// SetIncidentState moves the incident between Open and Suppressed.
func (a *Watchdogs) SetIncidentState(ctx context.Context, c IncidentChange) (IncidentView, error) {
	inc, err := a.Svc.SetState(ctx, c.Scope, c.Actor, c.IncidentID, c.State, c.Reason)
	return IncidentView{Incident: inc}, ApplicationError(err)
}

// IncidentRunID names the job run of an incident's run_assembly action:
// fixed by the device, the incident and the action, so a retried or
// replayed step finds the run it made rather than make another (the
// device's GUID keeps it unique across databases sharing one Temporal
// server, as incident IDs are not).
func IncidentRunID(guid cairn.DeviceGUID, incidentID int64, action int) cairn.RunID {
	return cairn.RunID(fmt.Sprintf("watchdog-%s-%d-%d", guid, incidentID, action))
}

// IncidentRun is a run_assembly action's job run.
type IncidentRun struct {
	RunID cairn.RunID
	// Finished: the run was made finished (its one device was skipped or
	// could not run the script); nothing is to execute.
	Finished bool
}

// CreateIncidentRun makes the job run of a run_assembly action: the
// watchdog's assembly version, signed for the incident's device alone,
// refused (assembly_changed) when its body changed since the watchdog was
// saved. Idempotent: a second call finds the run the first made.
func (a *Watchdogs) CreateIncidentRun(ctx context.Context, ref IncidentActionRef) (IncidentRun, error) {
	p, err := a.Svc.IncidentPlan(ctx, ref.IncidentID)
	if err != nil {
		return IncidentRun{}, ApplicationError(err)
	}
	if ref.Action < 0 || ref.Action >= len(p.Actions) || p.Actions[ref.Action].Type != watchdogs.ActionRunAssembly {
		return IncidentRun{}, ApplicationError(cairn.Errorf(cairn.ECodeValidation, "action %d is not a run_assembly", ref.Action))
	}
	if a.Runs == nil {
		return IncidentRun{}, notWired("automation")
	}
	act := p.Actions[ref.Action]
	id := IncidentRunID(p.Incident.DeviceGuid, ref.IncidentID, ref.Action)
	if run, err := a.Runs.GetRun(ctx, cairn.AllSites, string(id), false); err == nil {
		return IncidentRun{RunID: run.ID, Finished: run.FinishedAt != nil}, nil
	} else if !cairn.IsCode(err, cairn.ECodeNotFound) {
		return IncidentRun{}, err
	}
	targets, err := a.Runs.ResolveTargets(ctx, cairn.AllSites, []string{string(p.Incident.DeviceGuid)})
	if err != nil {
		return IncidentRun{}, ApplicationError(err)
	}
	asm := act.AssemblyID
	run, err := a.Runs.CreateRun(ctx, automation.RunSpec{ID: id, Kind: automation.RunQuick, Trigger: automation.TriggerManual,
		AssemblyID: &asm, AssemblyVersion: act.AssemblyVersion, AssemblySHA256: act.AssemblySHA256, Parameters: act.Parameters,
		RequestedBy: "watchdog:" + p.WatchdogName, Targets: targets})
	if err != nil {
		return IncidentRun{}, ApplicationError(err)
	}
	return IncidentRun{RunID: run.ID, Finished: run.FinishedAt != nil}, nil
}

// IncidentRunOutcome reads what a run_assembly action's run did on the
// device: succeeded, or failed with the exit code or error.
func (a *Watchdogs) IncidentRunOutcome(ctx context.Context, runID cairn.RunID) (watchdogs.Outcome, error) {
	run, err := a.Runs.GetRun(ctx, cairn.AllSites, string(runID), true)
	if err != nil {
		return watchdogs.Outcome{}, ApplicationError(err)
	}
	o := watchdogs.Outcome{Status: "failed", RunID: string(runID)}
	if len(run.Results) == 0 {
		o.Message = "the run has no result"
		return o, nil
	}
	r := run.Results[0]
	switch {
	case r.Status == automation.StatusSucceeded:
		o.Status, o.Message = "succeeded", fmt.Sprintf("%s exited 0", run.AssemblyName)
	case r.ErrorMessage != "":
		o.Message = fmt.Sprintf("%s: %s", r.Status, r.ErrorMessage)
	case r.ExitCode != nil:
		o.Message = fmt.Sprintf("%s exited %d", run.AssemblyName, *r.ExitCode)
	default:
		o.Message = r.Status
	}
	return o, nil
}

// NotifyStepInput names a notification step of an incident.
type NotifyStepInput struct {
	IncidentID int64
	Step       int
}

// PlanIncidentNotifications decides which channels a notification step
// sends to (routing, repetition, maintenance windows).
func (a *Watchdogs) PlanIncidentNotifications(ctx context.Context, in NotifyStepInput) (watchdogs.NotifyPlan, error) {
	p, err := a.Svc.PlanNotifications(ctx, in.IncidentID, in.Step)
	return p, ApplicationError(err)
}

// DeliverIncidentNotification sends one (incident, step, channel) at most
// once (the delivery row is claimed before sending); a clean failure is
// returned for the activity's retry policy to retry, a refusal (4xx, no
// STARTTLS, bad credentials) is not retried.
func (a *Watchdogs) DeliverIncidentNotification(ctx context.Context, d watchdogs.Delivery) (string, error) {
	status, err := a.Svc.Deliver(ctx, d)
	return status, ApplicationError(err)
}
