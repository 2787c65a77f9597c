package auth

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
)

// DeleteExpiredSessions removes sessions past their lifetime or idle
// limit. Authenticate already refuses them; this keeps the table small.
// The maintenance schedule runs it once per deployment.
func (s *Service) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	now := s.cfg.Now()
	return s.store.SessionDeleteExpired(ctx, db.SessionDeleteExpiredParams{Now: now, IdleBefore: now.Add(-s.cfg.SessionIdle)})
}

// DeleteExpiredPendingTokens forgets used pending-MFA token IDs whose
// tokens have expired (a replay of them fails on expiry anyway), and API
// tokens a week past their expiry (listed as expired until then).
func (s *Service) DeleteExpiredPendingTokens(ctx context.Context) error {
	if err := s.store.PendingTokenDeleteExpired(ctx); err != nil {
		return err
	}
	_, err := s.DeleteExpiredAPITokens(ctx)
	return err
}
