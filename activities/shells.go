package activities

import (
	"context"
	"time"
)

// ShellMaintenance is the shells capability's clean-up.
type ShellMaintenance struct {
	// Shells is *shells.Service: sessions of a process that stopped.
	Shells LostShellCloser
}

// SweepShellSessions closes shell sessions whose bridging process stopped
// confirming them, with their activity rows.
func (m *ShellMaintenance) SweepShellSessions(ctx context.Context) (int64, error) {
	if m.Shells == nil {
		return 0, notWired("Shells")
	}
	return m.Shells.CloseLost(ctx, 0)
}

// LostShellCloser is *shells.Service.
type LostShellCloser interface {
	CloseLost(ctx context.Context, lostAfter time.Duration) (int64, error)
}
