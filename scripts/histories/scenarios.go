package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/workflows"
)

// standIns answer the activities by name, without a database: a history
// records only what an activity returned.
var standIns = map[string]any{
	"Identify": func(context.Context) (activities.WorkerIdentity, error) {
		return activities.WorkerIdentity{Identity: "histories", TaskQueue: queue, At: time.Unix(0, 0).UTC()}, nil
	},
	"DecideApproval":      func(_ context.Context, in activities.DecideInput) (string, error) { return in.Status, nil },
	"SweepSessions":       func(context.Context) (int64, error) { return 2, nil },
	"SweepPresence":       func(context.Context) (int64, error) { return 1, nil },
	"DropSocket":          func(context.Context, workflows.TrustActionInput) error { return nil },
	"RecordTrustActivity": func(context.Context, workflows.TrustActionInput) error { return nil },
	"PublishTrustChange":  func(context.Context, workflows.TrustActionInput) error { return nil },
}

var scenarios = []scenario{
	{"worker_probe.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.WorkerProbeWorkflowID(queue, unique("probe")), workflows.WorkerProbe)
		return wait(ctx, run, err)
	}, false},
	// Recorded before EnrollmentApproval took decisions as updates: an
	// unknown decision, then approve, by signal.
	{"enrollment_signal_approve_v0.json", func(ctx context.Context, c client.Client) (string, error) {
		id := workflows.EnrollmentWorkflowID(unique("signal-approve"))
		run, err := start(ctx, c, id, workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: id, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			return "", err
		}
		for _, d := range []workflows.EnrollmentDecision{{Decision: "maybe", Actor: "eve"}, {Decision: workflows.DecisionApprove, Actor: "alice"}} {
			if err := c.SignalWorkflow(ctx, id, "", workflows.SignalEnrollmentDecision, d); err != nil {
				return "", err
			}
		}
		return wait(ctx, run, nil)
	}, true},
	// Recorded before the update change: nobody decides, the request expires.
	{"enrollment_expire_v0.json", func(ctx context.Context, c client.Client) (string, error) {
		id := workflows.EnrollmentWorkflowID(unique("expire"))
		run, err := start(ctx, c, id, workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: id, ExpiresAt: time.Now().Add(2 * time.Second)})
		return wait(ctx, run, err)
	}, true},
	// Decisions as decide updates: one rejected by the validator, then a
	// deny whose recorded outcome the update returns.
	{"enrollment_update_deny.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("update-deny")
		run, err := start(ctx, c, workflows.EnrollmentWorkflowID(id), workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: id, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			return "", err
		}
		starter := workflows.EnrollmentStarter{Client: c, TaskQueue: queue}
		if _, err := starter.DecideAndWait(ctx, id, time.Now().Add(time.Hour), workflows.EnrollmentDecision{Decision: "maybe", Actor: "eve"}); err == nil {
			return "", errors.New("an unknown decision was accepted")
		}
		res, err := starter.DecideAndWait(ctx, id, time.Now().Add(time.Hour), workflows.EnrollmentDecision{Decision: workflows.DecisionDeny, Actor: "bob"})
		if err != nil {
			return "", err
		}
		if res.Status != "denied" {
			return "", fmt.Errorf("update answered %+v", res)
		}
		return wait(ctx, run, nil)
	}, false},
	{"maintenance_sessions.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobSessions)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobSessions})
		return wait(ctx, run, err)
	}, false},
	{"maintenance_presence.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobPresence)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobPresence})
		return wait(ctx, run, err)
	}, false},
	{"device_trust_quarantine.json", func(ctx context.Context, c client.Client) (string, error) {
		return trustAction(ctx, c, "quarantine", "quarantined")
	}, false},
	{"device_trust_unquarantine.json", func(ctx context.Context, c client.Client) (string, error) {
		return trustAction(ctx, c, "unquarantine", "active")
	}, false},
}

func trustAction(ctx context.Context, c client.Client, action, state string) (string, error) {
	in := workflows.TrustActionInput{GUID: unique("guid"), Hostname: "host-1", SiteID: 1, SiteSlug: "hq",
		Action: action, TrustState: state, TokenVersion: 2, Actor: "admin"}
	run, err := start(ctx, c, workflows.DeviceTrustWorkflowID(in.GUID, action, in.TokenVersion), workflows.DeviceTrustAction, in)
	return wait(ctx, run, err)
}
