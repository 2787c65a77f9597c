package api

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn/internal/backup"
)

// ScheduledBackupRunner starts the ScheduledBackup workflow
// (workflowclient.ScheduledBackupStarter).
type ScheduledBackupRunner interface {
	Start(ctx context.Context) error
}

// scheduleRoutes are the scheduled automatic backups' settings and runs
// (issue 26, beyond the seed).
func (a *backupAPI) scheduleRoutes() []Route {
	return []Route{
		{"GET", "/api/server/backup/schedule", AuthAdmin, getAction(a.Server, a.schedule), "Get the backup schedule and its recent runs"},
		{"PUT", "/api/server/backup/schedule", AuthAdmin, jsonAction(a.Server, http.StatusOK, false, a.setSchedule), "Set the backup schedule"},
		{"POST", "/api/server/backup/schedule/run", AuthAdmin, jsonAction(a.Server, http.StatusAccepted, true, a.runSchedule).
			Errors(ECodeTemporalUnavailable), "Write a scheduled backup now"},
		{"POST", "/api/server/backup/drill/run", AuthAdmin, jsonAction(a.Server, http.StatusAccepted, true, a.runDrill).
			Errors(ECodeTemporalUnavailable), "Run a restore drill now"},
	}
}

type backupScheduleJSON struct {
	Settings backup.ScheduleSettings `json:"settings"`
	// LastSuccessAt is the last scheduled backup that succeeded;
	// NextDueAt when the next is due (absent while disabled).
	LastSuccessAt *time.Time   `json:"last_success_at,omitempty"`
	NextDueAt     *time.Time   `json:"next_due_at,omitempty"`
	Runs          []backup.Run `json:"runs"`
	// Drills are the newest restore drills: succeeded is a pass.
	Drills []backup.Run `json:"drills"`
}

func (a *backupAPI) schedule(r *http.Request) (backupScheduleJSON, error) {
	ctx := r.Context()
	s, err := a.Backups.Schedule(ctx)
	if err != nil {
		return backupScheduleJSON{}, err
	}
	runs, err := a.Backups.Runs(ctx, backup.RunScheduled, 10)
	if err != nil {
		return backupScheduleJSON{}, err
	}
	last, err := a.Backups.LastSuccess(ctx)
	if err != nil {
		return backupScheduleJSON{}, err
	}
	drills, err := a.Backups.Runs(ctx, backup.RunDrill, 5)
	if err != nil {
		return backupScheduleJSON{}, err
	}
	out := backupScheduleJSON{Settings: s, Runs: runs, Drills: drills}
	if !last.IsZero() {
		out.LastSuccessAt = &last
	}
	if s.Enabled {
		next := last.Add(time.Duration(s.IntervalHours) * time.Hour)
		if next.Before(a.Now()) {
			next = a.Now()
		}
		out.NextDueAt = &next
	}
	return out, nil
}

type backupScheduleRequest struct {
	Enabled       bool   `json:"enabled"`
	Directory     string `json:"directory"`
	IntervalHours int    `json:"interval_hours"`
	KeepDaily     int    `json:"keep_daily"`
	KeepWeekly    int    `json:"keep_weekly"`
	KeepMonthly   int    `json:"keep_monthly"`
}

func (a *backupAPI) setSchedule(r *http.Request, req backupScheduleRequest) (backupScheduleJSON, error) {
	_, err := a.Backups.SetSchedule(r.Context(), backup.ScheduleSettings{Enabled: req.Enabled, Directory: req.Directory,
		IntervalHours: req.IntervalHours, KeepDaily: req.KeepDaily, KeepWeekly: req.KeepWeekly, KeepMonthly: req.KeepMonthly},
		principal(r.Context()).Username)
	if err != nil {
		return backupScheduleJSON{}, err
	}
	return a.schedule(r)
}

type backupRunRequest struct{}

type backupRunJSON struct {
	Status string `json:"status" openapi:"enum=queued"`
}

func (a *backupAPI) runSchedule(r *http.Request, _ backupRunRequest) (backupRunJSON, error) {
	if err := a.Scheduled.Start(r.Context()); err != nil {
		return backupRunJSON{}, err
	}
	return backupRunJSON{Status: "queued"}, nil
}

func (a *backupAPI) runDrill(r *http.Request, _ backupRunRequest) (backupRunJSON, error) {
	if err := a.Drills.Start(r.Context()); err != nil {
		return backupRunJSON{}, err
	}
	return backupRunJSON{Status: "queued"}, nil
}
