package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Maintenance jobs: periodic clean-up that must run once per deployment,
// not once per replica. Each has its own schedule, maintenance:<job>,
// which starts the Maintenance workflow with the job's name.
const (
	JobSessions      = "sessions"
	JobPendingTokens = "pending-tokens"
	JobRateLimits    = "rate-limits"
	JobDPoP          = "dpop-jtis"
	JobRefreshTokens = "refresh-tokens"
	JobPresence      = "presence"
	// JobAgentRequests deletes command-path requests past their deadline
	// whose holder died before it could take them.
	JobAgentRequests = "agent-requests"
	// JobShellSessions closes shell sessions whose process died.
	JobShellSessions = "shell-sessions"
	// JobFileTransfers deletes transfer content past its retention that
	// its workflow did not (docs/architecture.md "File transfers").
	JobFileTransfers = "file-transfers"
	// JobJobSchedules makes every scheduled job's Temporal Schedule match
	// its committed row: a save mirrors the row after its commit, and a
	// mirror that failed (Temporal down or busy) is repaired here.
	JobJobSchedules = "job-schedules"
)

// MaintenanceJob is one job, how often its schedule starts it, and the
// activity that does it (its registered name: the method's). Capabilities
// declare their jobs (engine.Capability.Maintenance).
type MaintenanceJob struct {
	Name     string
	Every    time.Duration
	Activity string
}

// MaintenanceScheduleID names the schedule of a job; it is also the
// workflow ID prefix of its runs (the schedule appends the start time).
func MaintenanceScheduleID(job string) string { return "maintenance:" + job }

// JobKindMaintenance is the JobKind search attribute of a job's runs.
func JobKindMaintenance(job string) string { return "maintenance_" + job }

// MaintenanceInput names the job a run does and the activity that does
// it. Schedules written before jobs were declared by capabilities carry no
// Activity; their jobs' activities are in legacyJobActivities.
type MaintenanceInput struct {
	Job      string
	Activity string `json:",omitempty"`
}

// legacyJobActivities are the activities of the jobs that existed before
// MaintenanceInput named its activity: runs of their old schedules, and
// their histories, do the same work as before.
var legacyJobActivities = map[string]string{
	JobSessions:      "SweepSessions",
	JobPendingTokens: "SweepPendingTokens",
	JobRateLimits:    "SweepRateLimits",
	JobDPoP:          "SweepDPoP",
	JobRefreshTokens: "SweepRefreshTokens",
	JobPresence:      "SweepPresence",
	JobAgentRequests: "SweepAgentRequests",
	JobShellSessions: "SweepShellSessions",
	JobFileTransfers: "SweepFileTransfers",
	JobJobSchedules:  "ReconcileJobSchedules",
	JobWatchdogs:     "EvaluateDueWatchdogs",
}

// LegacyJob reports whether job existed before MaintenanceInput named its
// activity (its old schedules name only the job).
func LegacyJob(job string) bool {
	_, ok := legacyJobActivities[job]
	return ok
}

// MaintenanceResult is what a run did.
type MaintenanceResult struct {
	Job     string
	Deleted int64
}

// Maintenance runs one clean-up job as one activity, retried with backoff
// until it succeeds (the jobs are idempotent deletes). One workflow type
// serves every job because they all have this shape; the job is the
// input, and each job's schedule gives it its own interval, pause switch
// and history in the Temporal UI. While a run is still retrying, its
// schedule skips further starts (overlap policy skip).
func Maintenance(ctx workflow.Context, in MaintenanceInput) (MaintenanceResult, error) {
	act := in.Activity
	if act == "" {
		act = legacyJobActivities[in.Job]
	}
	if act == "" {
		return MaintenanceResult{}, temporal.NewNonRetryableApplicationError("unknown maintenance job "+in.Job, "UnknownJob", nil)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{"NotWired"},
		},
	})
	var n int64
	if err := workflow.ExecuteActivity(ctx, act).Get(ctx, &n); err != nil {
		return MaintenanceResult{}, err
	}
	return MaintenanceResult{Job: in.Job, Deleted: n}, nil
}
