package engine

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/backup"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// backupCapability is the encrypted export, analysis and restore of the
// Engine's configuration and trust (issue 26); a restore of a running
// Engine is the BackupRestore workflow.
var backupCapability = Capability{
	Name: "backup",
	Codes: []cairn.Code{
		{ID: backup.ECodeMalformed, Status: http.StatusBadRequest},
		{ID: backup.ECodeWrongCipher, Status: http.StatusBadRequest},
		{ID: backup.ECodeUnsupported, Status: http.StatusBadRequest},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.Backups = backup.New(e.Store, e.Cipher, e.cfg.Now)
		// Agents pin the local CA: backups carry it (nil TLS: none).
		e.Backups.SetLocalCA(e.cfg.TLS.LocalCADir())
		return nil
	},
	API: func(e *Engine) api.Area {
		return api.BackupArea{Backups: e.Backups, Restores: workflowclient.RestoreStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue},
			Scheduled: workflowclient.ScheduledBackupStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue},
			Drills:    workflowclient.RestoreDrillStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue}}
	},
	Workflows: []any{workflows.BackupRestore, workflows.ScheduledBackup, workflows.RestoreDrill},
	Activities: func(e *Engine) []any {
		starter := workflowclient.ScheduledBackupStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue}
		drills := workflowclient.RestoreDrillStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue}
		return []any{&activities.Backup{Restores: e.Backups, Schedules: e.reconcileSchedules},
			&activities.ScheduledBackups{Backups: e.Backups, Start: starter.Start, Now: e.cfg.Now},
			&activities.RestoreDrills{Backups: e.Backups, Start: drills.Start, Now: e.cfg.Now}}
	},
	// Scheduled automatic backups: a cheap due check, which starts the
	// ScheduledBackup workflow when the interval has passed.
	Maintenance: []workflows.MaintenanceJob{
		{Name: workflows.JobScheduledBackups, Every: 15 * time.Minute, Activity: "StartDueBackup"},
		// The weekly restore drill while scheduled backups are enabled.
		{Name: workflows.JobRestoreDrill, Every: time.Hour, Activity: "StartDueDrill"},
	},
}
