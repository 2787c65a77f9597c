package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/cairn-rmm/cairn/internal/backup"
)

// Backup carries out a restore's steps (issue 26): apply the staged backup
// in one PostgreSQL transaction, then make Temporal's Schedules match the
// restored rows.
type Backup struct {
	// Restores is *backup.Service.
	Restores interface {
		Apply(ctx context.Context, id string) (backup.Result, error)
	}
	// Schedules makes the maintenance Schedules and the scheduled jobs'
	// Schedules what the (restored) database says (Engine.ensureSchedules).
	Schedules func(ctx context.Context) error
}

// ApplyRestore applies the staged backup id. A retry after the commit
// finds nothing staged and answers Applied false: the data is in.
// It heartbeats while the transaction runs, so an attempt lost with its
// process (kill -9) is retried within the heartbeat timeout rather than
// after the whole StartToClose timeout.
func (a *Backup) ApplyRestore(ctx context.Context, id string) (backup.Result, error) {
	defer heartbeatWhileRunning(ctx)()
	res, err := a.Restores.Apply(ctx, id)
	return res, ApplicationError(err)
}

// ReconcileRestoredSchedules creates the Schedules the restored rows name
// and deletes those they no longer do.
func (a *Backup) ReconcileRestoredSchedules(ctx context.Context) error {
	return ApplicationError(a.Schedules(ctx))
}

// ScheduledBackups writes the scheduled automatic backups (issue 26).
type ScheduledBackups struct {
	// Backups is *backup.Service.
	Backups interface {
		Schedule(ctx context.Context) (backup.ScheduleSettings, error)
		LastSuccess(ctx context.Context) (time.Time, error)
		BeginRun(ctx context.Context, id string) error
		FinishRun(ctx context.Context, id string, r backup.Run) error
		WriteScheduled(ctx context.Context, dir string, now time.Time) (string, int64, error)
	}
	// Start starts the ScheduledBackup workflow (joining one running).
	Start func(ctx context.Context) error
	Now   func() time.Time
}

// StartDueBackup is the scheduled-backups maintenance job: it starts a
// backup when the schedule is enabled and one is due (1), else nothing (0).
func (a *ScheduledBackups) StartDueBackup(ctx context.Context) (int64, error) {
	s, err := a.Backups.Schedule(ctx)
	if err != nil || !s.Enabled {
		return 0, err
	}
	last, err := a.Backups.LastSuccess(ctx)
	if err != nil {
		return 0, err
	}
	if !backup.Due(a.Now(), last, s.IntervalHours) {
		return 0, nil
	}
	return 1, a.Start(ctx)
}

// WriteScheduledBackup writes one backup into the configured directory
// and prunes what the retention drops, recording the run. A failure of
// the backup itself (directory gone, disk full, cipher locked) is the
// run's outcome, recorded and answered, not an error to retry: the next
// due check tries again. Only failing to record is an error.
func (a *ScheduledBackups) WriteScheduledBackup(ctx context.Context, id string) (backup.Run, error) {
	if err := a.Backups.BeginRun(ctx, id); err != nil {
		return backup.Run{}, err
	}
	defer heartbeatWhileRunning(ctx)()
	run := backup.Run{ID: id, Status: "succeeded"}
	s, err := a.Backups.Schedule(ctx)
	if err == nil && s.Directory == "" {
		err = errors.New("no backup directory is configured")
	}
	if err == nil {
		run.File, run.SizeBytes, err = a.Backups.WriteScheduled(ctx, s.Directory, a.Now())
	}
	if err == nil {
		run.Pruned, err = backup.Prune(s.Directory, s.KeepDaily, s.KeepWeekly, s.KeepMonthly)
		if err != nil {
			err = fmt.Errorf("the backup was written, but pruning failed: %w", err)
		}
	}
	if err != nil {
		run.Status, run.Detail = "failed", err.Error()
	} else {
		run.Detail = fmt.Sprintf("wrote %s; pruned %d", run.File, len(run.Pruned))
	}
	if err := a.Backups.FinishRun(ctx, id, run); err != nil {
		return backup.Run{}, err
	}
	return run, nil
}

// RestoreDrills run the weekly restore drill (issue 26): the newest
// scheduled backup restored into a scratch database and checked.
type RestoreDrills struct {
	// Backups is *backup.Service.
	Backups interface {
		Schedule(ctx context.Context) (backup.ScheduleSettings, error)
		LastDrill(ctx context.Context) (time.Time, error)
		BeginDrill(ctx context.Context, id string) error
		FinishRun(ctx context.Context, id string, r backup.Run) error
		Drill(ctx context.Context, dir string) (backup.DrillReport, error)
	}
	// Start starts the RestoreDrill workflow (joining one running).
	Start func(ctx context.Context) error
	Now   func() time.Time
}

// StartDueDrill is the restore-drill maintenance job: it starts a drill
// when scheduled backups are enabled and none ran for a week (1), else
// nothing (0).
func (a *RestoreDrills) StartDueDrill(ctx context.Context) (int64, error) {
	s, err := a.Backups.Schedule(ctx)
	if err != nil || !s.Enabled {
		return 0, err
	}
	last, err := a.Backups.LastDrill(ctx)
	if err != nil || !backup.DrillDue(a.Now(), last, s) {
		return 0, err
	}
	return 1, a.Start(ctx)
}

// RunRestoreDrill runs one drill and records its outcome: passed
// (succeeded) or failed, with what was found. A drill that could not run
// is a failed run too, with the reason; only failing to record is an
// error.
func (a *RestoreDrills) RunRestoreDrill(ctx context.Context, id string) (backup.Run, error) {
	if err := a.Backups.BeginDrill(ctx, id); err != nil {
		return backup.Run{}, err
	}
	defer heartbeatWhileRunning(ctx)()
	run := backup.Run{ID: id}
	s, err := a.Backups.Schedule(ctx)
	var rep backup.DrillReport
	if err == nil && s.Directory == "" {
		err = backup.ErrNoDirectory
	}
	if err == nil {
		rep, err = a.Backups.Drill(ctx, s.Directory)
	}
	run.File = rep.File
	run.Status, run.Detail = backup.DrillSummary(rep, err)
	if err := a.Backups.FinishRun(ctx, id, run); err != nil {
		return backup.Run{}, err
	}
	return run, nil
}

// heartbeatWhileRunning records a heartbeat every 5 s until the returned
// stop is called, so an attempt lost with its process (kill -9) is retried
// within the heartbeat timeout rather than after StartToClose. Outside an
// activity (a direct call in a test) it does nothing.
func heartbeatWhileRunning(ctx context.Context) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}
