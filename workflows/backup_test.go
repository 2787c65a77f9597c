package workflows_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/backup"
	"github.com/cairn-rmm/cairn/workflows"
)

// restoreDeps is a restore whose transaction fails a few times before it
// commits (a crash, PostgreSQL away), or is refused.
type restoreDeps struct {
	mu        sync.Mutex
	failures  int
	refuse    bool
	applies   int
	schedules int
	schedErr  error
}

func (d *restoreDeps) Apply(_ context.Context, id string) (backup.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.applies++
	if d.refuse {
		return backup.Result{}, cairn.Errorf(backup.ECodeUnsupported, "column sites.region is not in the running schema")
	}
	if d.applies <= d.failures {
		return backup.Result{}, errors.New("connection reset")
	}
	return backup.Result{Applied: true, Rows: map[string]int64{"sites": 2}}, nil
}

func (d *restoreDeps) reconcile(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.schedules++
	return d.schedErr
}

func runRestore(t *testing.T, d *restoreDeps) (workflows.BackupRestoreResult, error) {
	t.Helper()
	return runRestoreIn(t, d, workflows.BackupRestoreInput{ID: "r-1", Actor: "alice"})
}

func runRestoreIn(t *testing.T, d *restoreDeps, in workflows.BackupRestoreInput) (workflows.BackupRestoreResult, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.Backup{Restores: d, Schedules: d.reconcile})
	env.ExecuteWorkflow(workflows.BackupRestore, in)
	require.True(t, env.IsWorkflowCompleted())
	var res workflows.BackupRestoreResult
	if err := env.GetWorkflowError(); err != nil {
		return res, err
	}
	require.NoError(t, env.GetWorkflowResult(&res))
	return res, nil
}

// The transaction is retried until it commits; then the Schedules are
// reconciled.
func TestBackupRestoreRetriesTheTransaction(t *testing.T) {
	t.Parallel()
	d := &restoreDeps{failures: 3}
	res, err := runRestore(t, d)
	require.NoError(t, err)
	require.Equal(t, 4, d.applies)
	require.Equal(t, 1, d.schedules)
	require.Equal(t, workflows.BackupRestoreResult{Applied: true, Rows: map[string]int64{"sites": 2}}, res)
	require.Equal(t, "restore:r-1", workflows.BackupRestoreWorkflowID("r-1"))
}

// A refused backup is not retried, and nothing is reconciled.
func TestBackupRestoreRefusalIsFinal(t *testing.T) {
	t.Parallel()
	d := &restoreDeps{refuse: true}
	_, err := runRestore(t, d)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, backup.ECodeUnsupported, app.Type())
	require.Equal(t, 1, d.applies)
	require.Zero(t, d.schedules)
}

// Schedules that cannot be reconciled do not undo a committed restore
// (the next start or unlock reconciles them).
func TestBackupRestoreSurvivesScheduleFailure(t *testing.T) {
	t.Parallel()
	d := &restoreDeps{schedErr: errors.New("temporal away")}
	res, err := runRestore(t, d)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, 10, d.schedules)
}

// Another cipher's backup: the Schedules wait for the unlock after the
// restart (this process's payload key is not in the restored database).
func TestBackupRestoreOfAForeignCipherLeavesSchedules(t *testing.T) {
	t.Parallel()
	d := &restoreDeps{}
	res, err := runRestoreIn(t, d, workflows.BackupRestoreInput{ID: "r-2", Actor: "alice", ForeignCipher: true})
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, 1, d.applies)
	require.Zero(t, d.schedules)
}

type scheduledDeps struct {
	settings backup.ScheduleSettings
	last     time.Time
	written  []string
	finished []backup.Run
	started  int
	writeErr error
}

func (d *scheduledDeps) Schedule(context.Context) (backup.ScheduleSettings, error) {
	return d.settings, nil
}
func (d *scheduledDeps) LastSuccess(context.Context) (time.Time, error) { return d.last, nil }
func (d *scheduledDeps) BeginRun(context.Context, string) error         { return nil }
func (d *scheduledDeps) FinishRun(_ context.Context, _ string, r backup.Run) error {
	d.finished = append(d.finished, r)
	return nil
}

func (d *scheduledDeps) WriteScheduled(_ context.Context, dir string, now time.Time) (string, int64, error) {
	if d.writeErr != nil {
		return "", 0, d.writeErr
	}
	d.written = append(d.written, dir)
	return backup.FileName(now), 42, nil
}

// A scheduled backup writes into the configured directory and records
// the run; a failing write is the run's recorded outcome, not a retry
// loop.
func TestScheduledBackupWritesAndRecords(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		writeErr error
		status   string
	}{{"written", nil, "succeeded"}, {"disk full", errors.New("no space left on device"), "failed"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := &scheduledDeps{settings: backup.ScheduleSettings{Enabled: true, Directory: t.TempDir(), IntervalHours: 24, KeepDaily: 7}, writeErr: c.writeErr}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestWorkflowEnvironment()
			env.RegisterActivity(&activities.ScheduledBackups{Backups: d, Now: func() time.Time { return now }})
			env.ExecuteWorkflow(workflows.ScheduledBackup, workflows.ScheduledBackupInput{ID: "run-1"})
			require.NoError(t, env.GetWorkflowError())
			var run backup.Run
			require.NoError(t, env.GetWorkflowResult(&run))
			require.Equal(t, c.status, run.Status)
			require.Len(t, d.finished, 1)
			require.Equal(t, c.status, d.finished[0].Status)
			if c.writeErr == nil {
				require.Equal(t, backup.FileName(now), run.File)
			} else {
				require.Contains(t, run.Detail, "no space left")
			}
		})
	}
}

// The due check starts a backup only when enabled and due.
func TestStartDueBackup(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		enabled bool
		last    time.Time
		want    int64
	}{{false, time.Time{}, 0}, {true, time.Time{}, 1}, {true, now.Add(-time.Hour), 0}, {true, now.Add(-25 * time.Hour), 1}} {
		d := &scheduledDeps{settings: backup.ScheduleSettings{Enabled: c.enabled, Directory: "/x", IntervalHours: 24}, last: c.last}
		a := &activities.ScheduledBackups{Backups: d, Now: func() time.Time { return now }, Start: func(context.Context) error { d.started++; return nil }}
		n, err := a.StartDueBackup(context.Background())
		require.NoError(t, err)
		require.Equal(t, c.want, n)
		require.EqualValues(t, c.want, d.started)
	}
}
