package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
)

// Maintenance runs the periodic clean-up jobs. The maintenance schedules
// start one run per job per interval for the whole deployment, so no
// replica runs tickers for them. Every job is an idempotent delete: a
// retry or a run on another replica is harmless.
type Maintenance struct {
	// Sessions is *auth.Service: operator sessions and used pending-MFA
	// token IDs.
	Sessions SessionSweeper
	// RateLimits is *db.Store: fixed-window counters of past windows.
	RateLimits RateLimitSweeper
	// DPoP is *devicetrust.Verifier: seen DPoP proof IDs.
	DPoP ExpiredDeleter
	// RefreshTokens is *devicetrust.Tokens: device refresh tokens.
	RefreshTokens ExpiredDeleter
	// Presence is *events.Presence: operator streams of dead replicas.
	Presence StaleDeleter
	// AgentRequests is *db.Store: command-path requests past their deadline.
	AgentRequests AgentRequestSweeper
	// Shells is *shells.Service: sessions of a process that stopped.
	Shells LostShellCloser
	// Transfers is *transfers.Service: file-transfer content past its
	// retention, and uploads whose staging died.
	Transfers TransferSweeper
	// JobSchedules is the Engine: it reconciles scheduled jobs' Temporal
	// Schedules with PostgreSQL.
	JobSchedules JobScheduleReconciler
}

// JobScheduleReconciler makes every scheduled job's Temporal Schedule
// match its row: missing ones created, drifted ones updated, orphans
// deleted (engine.Engine.ReconcileJobSchedules).
type JobScheduleReconciler interface {
	ReconcileJobSchedules(ctx context.Context) error
}

// ReconcileJobSchedules is the maintenance:job-schedules job: it repairs
// a scheduled job whose Schedule was not mirrored after its save.
func (m *Maintenance) ReconcileJobSchedules(ctx context.Context) (int64, error) {
	if m.JobSchedules == nil {
		return 0, notWired("job schedules")
	}
	return 0, m.JobSchedules.ReconcileJobSchedules(ctx)
}

// TransferSweeper deletes file-transfer content nobody will fetch.
type TransferSweeper interface {
	Sweep(ctx context.Context) (int64, error)
}

// SweepFileTransfers is the maintenance:file-transfers job.
func (m *Maintenance) SweepFileTransfers(ctx context.Context) (int64, error) {
	if m.Transfers == nil {
		return 0, notWired("Transfers")
	}
	return m.Transfers.Sweep(ctx)
}

// SessionSweeper deletes expired operator sessions and pending tokens.
type SessionSweeper interface {
	DeleteExpiredSessions(ctx context.Context) (int64, error)
	DeleteExpiredPendingTokens(ctx context.Context) error
}

// RateLimitSweeper deletes rate-limit windows long past.
type RateLimitSweeper interface {
	RateLimitDeleteExpired(ctx context.Context) error
}

// ExpiredDeleter deletes rows past their expiry and says how many.
type ExpiredDeleter interface {
	DeleteExpired(ctx context.Context) (int64, error)
}

// StaleDeleter deletes rows nobody refreshes any more.
type StaleDeleter interface {
	DeleteStale(ctx context.Context) (int64, error)
}

// SweepSessions deletes expired operator sessions; it returns how many.
func (m *Maintenance) SweepSessions(ctx context.Context) (int64, error) {
	if m.Sessions == nil {
		return 0, notWired("Sessions")
	}
	return m.Sessions.DeleteExpiredSessions(ctx)
}

// SweepPendingTokens forgets used pending-MFA tokens that expired.
func (m *Maintenance) SweepPendingTokens(ctx context.Context) (int64, error) {
	if m.Sessions == nil {
		return 0, notWired("Sessions")
	}
	return 0, m.Sessions.DeleteExpiredPendingTokens(ctx)
}

// SweepRateLimits deletes rate-limit windows older than a day.
func (m *Maintenance) SweepRateLimits(ctx context.Context) (int64, error) {
	if m.RateLimits == nil {
		return 0, notWired("RateLimits")
	}
	return 0, m.RateLimits.RateLimitDeleteExpired(ctx)
}

// SweepDPoP deletes expired DPoP replay entries.
func (m *Maintenance) SweepDPoP(ctx context.Context) (int64, error) {
	if m.DPoP == nil {
		return 0, notWired("DPoP")
	}
	return m.DPoP.DeleteExpired(ctx)
}

// SweepRefreshTokens deletes expired device refresh tokens.
func (m *Maintenance) SweepRefreshTokens(ctx context.Context) (int64, error) {
	if m.RefreshTokens == nil {
		return 0, notWired("RefreshTokens")
	}
	return m.RefreshTokens.DeleteExpired(ctx)
}

// SweepPresence deletes operator streams of replicas that stopped
// refreshing them, and announces the change.
func (m *Maintenance) SweepPresence(ctx context.Context) (int64, error) {
	if m.Presence == nil {
		return 0, notWired("Presence")
	}
	return m.Presence.DeleteStale(ctx)
}

// SweepAgentRequests deletes command-path requests past their deadline
// (their activity timed out long ago; the holder died before taking them).
func (m *Maintenance) SweepAgentRequests(ctx context.Context) (int64, error) {
	if m.AgentRequests == nil {
		return 0, notWired("AgentRequests")
	}
	return m.AgentRequests.AgentRequestDeleteExpired(ctx)
}

// SweepShellSessions closes shell sessions whose bridging process stopped
// confirming them, with their activity rows.
func (m *Maintenance) SweepShellSessions(ctx context.Context) (int64, error) {
	if m.Shells == nil {
		return 0, notWired("Shells")
	}
	return m.Shells.CloseLost(ctx, 0)
}

// LostShellCloser is *shells.Service.
type LostShellCloser interface {
	CloseLost(ctx context.Context, lostAfter time.Duration) (int64, error)
}

// AgentRequestSweeper is *db.Store.
type AgentRequestSweeper interface {
	AgentRequestDeleteExpired(ctx context.Context) (int64, error)
}

// notWired fails a job whose dependency the process did not give: a
// wiring bug that retrying cannot fix.
func notWired(dep string) error {
	return temporal.NewNonRetryableApplicationError("maintenance: "+dep+" is not wired", "NotWired", nil)
}
