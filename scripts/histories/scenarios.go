package main

import (
	"context"
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
	"DecideApproval": func(_ context.Context, in activities.DecideInput) (string, error) { return in.Status, nil },
	"SweepSessions":  func(context.Context) (int64, error) { return 2, nil },
	"SweepPresence":  func(context.Context) (int64, error) { return 1, nil },
}

var scenarios = []scenario{
	{"worker_probe.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.WorkerProbeWorkflowID(queue, unique("probe")), workflows.WorkerProbe)
		return wait(ctx, run, err)
	}},
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
	}},
	// Recorded before the update change: nobody decides, the request expires.
	{"enrollment_expire_v0.json", func(ctx context.Context, c client.Client) (string, error) {
		id := workflows.EnrollmentWorkflowID(unique("expire"))
		run, err := start(ctx, c, id, workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: id, ExpiresAt: time.Now().Add(2 * time.Second)})
		return wait(ctx, run, err)
	}},
	{"maintenance_sessions.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobSessions)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobSessions})
		return wait(ctx, run, err)
	}},
	{"maintenance_presence.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobPresence)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobPresence})
		return wait(ctx, run, err)
	}},
}
