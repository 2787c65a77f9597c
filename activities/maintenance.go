package activities

import (
	"context"

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
}

// The jobs of other capabilities are methods of their own activity structs
// (ShellMaintenance, TransferMaintenance, ScheduledJobs.ReconcileJobSchedules):
// each capability declares its jobs (engine.Capability.Maintenance).

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

// AgentRequestSweeper is *db.Store.
type AgentRequestSweeper interface {
	AgentRequestDeleteExpired(ctx context.Context) (int64, error)
}

// notWired fails a job whose dependency the process did not give: a
// wiring bug that retrying cannot fix.
func notWired(dep string) error {
	return temporal.NewNonRetryableApplicationError("maintenance: "+dep+" is not wired", "NotWired", nil)
}
