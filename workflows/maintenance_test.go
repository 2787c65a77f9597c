package workflows_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/internal/backup"
	"github.com/cairn-rmm/cairn/workflows"
)

// flakySweeper fails its first failures calls, then deletes n rows.
type flakySweeper struct {
	failures, calls int
	n               int64
}

func (f *flakySweeper) sweep() (int64, error) {
	f.calls++
	if f.calls <= f.failures {
		return 0, errors.New("database unavailable")
	}
	return f.n, nil
}

func (f *flakySweeper) DeleteExpiredSessions(context.Context) (int64, error) { return f.sweep() }
func (f *flakySweeper) DeleteExpiredPendingTokens(context.Context) error {
	_, err := f.sweep()
	return err
}
func (f *flakySweeper) RateLimitDeleteExpired(context.Context) error {
	_, err := f.sweep()
	return err
}
func (f *flakySweeper) DeleteExpired(context.Context) (int64, error) { return f.sweep() }
func (f *flakySweeper) DeleteStale(context.Context) (int64, error)   { return f.sweep() }
func (f *flakySweeper) AgentRequestDeleteExpired(context.Context) (int64, error) {
	return f.sweep()
}
func (f *flakySweeper) CloseLost(context.Context, time.Duration) (int64, error) { return f.sweep() }
func (f *flakySweeper) Sweep(context.Context) (int64, error)                    { return f.sweep() }
func (f *flakySweeper) ReconcileJobSchedules(context.Context) error {
	_, err := f.sweep()
	return err
}

// The scheduled-backup and restore-drill checks: reading the settings
// fails, then they are disabled.
func (f *flakySweeper) Schedule(context.Context) (backup.ScheduleSettings, error) {
	_, err := f.sweep()
	return backup.ScheduleSettings{}, err
}
func (f *flakySweeper) LastSuccess(context.Context) (time.Time, error) { return time.Time{}, nil }
func (f *flakySweeper) LastDrill(context.Context) (time.Time, error)   { return time.Time{}, nil }
func (f *flakySweeper) BeginRun(context.Context, string) error         { return nil }
func (f *flakySweeper) BeginDrill(context.Context, string) error       { return nil }
func (f *flakySweeper) FinishRun(context.Context, string, backup.Run) error {
	return nil
}
func (f *flakySweeper) WriteScheduled(context.Context, string, time.Time) (string, int64, error) {
	return "", 0, nil
}
func (f *flakySweeper) Drill(context.Context, string) (backup.DrillReport, error) {
	return backup.DrillReport{}, nil
}

func TestMaintenanceRetriesEachJobUntilDone(t *testing.T) {
	t.Parallel()
	for _, job := range engine.MaintenanceJobs() {
		// Schedules of a capability's job name its activity; schedules
		// written before that name only the job (legacy), and do the same.
		for _, in := range []workflows.MaintenanceInput{{Job: job.Name, Activity: job.Activity}, {Job: job.Name}} {
			if in.Activity == "" && !workflows.LegacyJob(job.Name) {
				continue // declared with its activity from the start: no schedule names only the job
			}
			t.Run(job.Name+"/activity="+in.Activity, func(t *testing.T) {
				t.Parallel()
				f := &flakySweeper{failures: 4, n: 7}
				var suite testsuite.WorkflowTestSuite
				env := suite.NewTestWorkflowEnvironment()
				env.RegisterActivity(&activities.Maintenance{Sessions: f, RateLimits: f, DPoP: f, RefreshTokens: f, Presence: f,
					AgentRequests: f})
				env.RegisterActivity(&activities.ShellMaintenance{Shells: f})
				env.RegisterActivity(&activities.TransferMaintenance{Transfers: f})
				env.RegisterActivity(&activities.ScheduledJobs{Schedules: f})
				env.RegisterActivity(&activities.WatchdogMaintenance{Due: f})
				env.RegisterActivity(&activities.ScheduledBackups{Backups: f, Now: time.Now})
				env.RegisterActivity(&activities.RestoreDrills{Backups: f, Now: time.Now})
				env.RegisterActivity(&activities.ServiceAdmin{Internal: f})
				env.RegisterActivity(&activities.Cluster{Sweep: func(context.Context) (int64, error) { return f.sweep() }})
				// The policy evaluation needs the whole patches service; the
				// workflow's retries are what this test is about, so its
				// activity is a stand-in under the same name.
				env.RegisterActivityWithOptions(func(context.Context) (int64, error) { return f.sweep() },
					activity.RegisterOptions{Name: "EvaluatePatchPolicies"})
				env.ExecuteWorkflow(workflows.Maintenance, in)
				require.True(t, env.IsWorkflowCompleted())
				require.NoError(t, env.GetWorkflowError())
				var res workflows.MaintenanceResult
				require.NoError(t, env.GetWorkflowResult(&res))
				require.Equal(t, 5, f.calls, "four failures, then success")
				require.Equal(t, job.Name, res.Job)
			})
		}
	}
}

func TestMaintenanceFailsFastOnWhatRetriesCannotFix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, job, errType string
	}{
		{"unknown job", "defragment", "UnknownJob"},
		{"dependency not wired", workflows.JobPresence, "NotWired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterActivity(&activities.Maintenance{})
			env.ExecuteWorkflow(workflows.Maintenance, workflows.MaintenanceInput{Job: tc.job})
			require.True(t, env.IsWorkflowCompleted())
			var appErr *temporal.ApplicationError
			require.ErrorAs(t, env.GetWorkflowError(), &appErr)
			require.Equal(t, tc.errType, appErr.Type())
		})
	}
}

func TestMaintenanceScheduleIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, job := range engine.MaintenanceJobs() {
		id := workflows.MaintenanceScheduleID(job.Name)
		require.False(t, seen[id], "duplicate job %s", job.Name)
		seen[id] = true
		require.Positive(t, job.Every)
		require.NotEmpty(t, job.Activity, job.Name)
	}
	require.Equal(t, "maintenance:sessions", workflows.MaintenanceScheduleID(workflows.JobSessions))
}
