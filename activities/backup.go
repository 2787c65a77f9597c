package activities

import (
	"context"
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
	done := make(chan struct{})
	defer close(done)
	if activity.IsActivity(ctx) {
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
	}
	res, err := a.Restores.Apply(ctx, id)
	return res, ApplicationError(err)
}

// ReconcileRestoredSchedules creates the Schedules the restored rows name
// and deletes those they no longer do.
func (a *Backup) ReconcileRestoredSchedules(ctx context.Context) error {
	return ApplicationError(a.Schedules(ctx))
}
