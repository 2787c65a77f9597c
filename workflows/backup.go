package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/backup"
)

// BackupRestoreWorkflowID names the restore of one staged backup.
func BackupRestoreWorkflowID(id string) string { return "restore:" + id }

// JobKindRestore is the JobKind search attribute of a restore.
const JobKindRestore = "restore"

// BackupRestoreInput names the staged backup (backup_restores.id); the
// data never travels through Temporal.
type BackupRestoreInput struct {
	ID    string `json:"id"`
	Actor string `json:"actor"`
	// ForeignCipher: another cipher wrote the backup. This process's
	// payload key is then not in the restored database, so Schedules it
	// encoded would not decode after the restart: they are left to the
	// reconciliation at the next unlock.
	ForeignCipher bool `json:"foreign_cipher,omitempty"`
}

// BackupRestoreResult is what the restore did.
type BackupRestoreResult struct {
	Rows map[string]int64 `json:"rows"`
	// Applied is false when a previous attempt had already committed.
	Applied bool `json:"applied"`
}

// BackupRestore restores a staged backup (SPEC "Backup and restore rules"
// 3): the data in one PostgreSQL transaction (ApplyRestore, retried until
// it commits or is refused: a crash before the commit leaves the previous
// state and the staged backup, which the retry applies; one after it
// finds nothing staged), then the Schedules reconciled from the restored
// rows. What lives in the Engine's memory (the cipher key, caches) is the
// caller's, which answers restart_required.
func BackupRestore(ctx workflow.Context, in BackupRestoreInput) (BackupRestoreResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.Backup
	var res backup.Result
	if err := workflow.ExecuteActivity(ctx, a.ApplyRestore, in.ID).Get(ctx, &res); err != nil {
		return BackupRestoreResult{}, err
	}
	if in.ForeignCipher {
		return BackupRestoreResult{Rows: res.Rows, Applied: res.Applied}, nil
	}
	sched := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
	if err := workflow.ExecuteActivity(sched, a.ReconcileRestoredSchedules).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("schedules after restore", "err", err)
		// The data is restored; the next start or unlock reconciles them.
	}
	return BackupRestoreResult{Rows: res.Rows, Applied: res.Applied}, nil
}

// ScheduledBackupWorkflowID is the one scheduled backup running at a
// time: a due check while one runs joins it.
const ScheduledBackupWorkflowID = "scheduled-backup"

// JobScheduledBackups is the maintenance job that starts a scheduled
// backup when one is due.
const JobScheduledBackups = "scheduled-backups"

// JobKindScheduledBackup is the JobKind search attribute of a scheduled
// backup.
const JobKindScheduledBackup = "scheduled_backup"

// ScheduledBackupInput names the run (backup_runs.id).
type ScheduledBackupInput struct {
	ID string `json:"id"`
}

// ScheduledBackup writes one encrypted export into the configured
// directory and applies the retention (docs/architecture.md "Scheduled
// backups"). One activity: the export streams to a file that is renamed
// into place only when complete, so a retry after a crash starts over.
func ScheduledBackup(ctx workflow.Context, in ScheduledBackupInput) (backup.Run, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5},
	})
	var a *activities.ScheduledBackups
	var run backup.Run
	err := workflow.ExecuteActivity(ctx, a.WriteScheduledBackup, in.ID).Get(ctx, &run)
	return run, err
}

// RestoreDrillWorkflowID is the one restore drill running at a time.
const RestoreDrillWorkflowID = "restore-drill"

// JobRestoreDrill is the maintenance job that starts the weekly drill.
const JobRestoreDrill = "restore-drill"

// JobKindRestoreDrill is the JobKind search attribute of a drill.
const JobKindRestoreDrill = "restore_drill"

// RestoreDrill restores the newest scheduled backup into a scratch
// database, checks row counts and foreign keys, and records pass or fail
// (docs/architecture.md "Scheduled backups"). One activity: the scratch
// database is made and dropped within it, so a retry starts clean.
func RestoreDrill(ctx workflow.Context, in ScheduledBackupInput) (backup.Run, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 3},
	})
	var a *activities.RestoreDrills
	var run backup.Run
	err := workflow.ExecuteActivity(ctx, a.RunRestoreDrill, in.ID).Get(ctx, &run)
	return run, err
}
