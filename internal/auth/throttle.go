package auth

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// throttleKey is one failure budget a sign-in step is charged against.
type throttleKey struct {
	name string
	rule ratelimit.Backoff
}

func keyNames(keys []throttleKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

func mfaKey(userID int64) string { return "login:mfa:" + strconv.FormatInt(userID, 10) }

// loginKeys are the budgets of a password step: the client address, the
// username, and, for a name that is no local account while a directory
// provider is enabled, the directory's stricter per-username bound. Every
// name that could reach the directory gets the directory bound, whether
// the directory knows it or not, so its answers do not tell the two
// apart; local accounts keep the gentler budget (their owners must not be
// locked out by strangers).
func (s *Service) loginKeys(ctx context.Context, username string, local bool, meta ClientMeta) ([]throttleKey, error) {
	keys := []throttleKey{{"login:addr:" + meta.Addr, FailuresPerAddress}, {"login:user:" + username, PasswordFailuresPerUser}}
	if local || s.cfg.Directory == nil {
		return keys, nil
	}
	providers, err := s.store.DirectoryProviderListEnabled(ctx)
	if err != nil {
		return nil, err
	}
	if len(providers) > 0 {
		keys = append(keys, throttleKey{"login:directory:" + username, DirectoryFailuresPerUser})
	}
	return keys, nil
}

// admit checks every budget before charging any, so an attempt refused
// for one key costs nothing on the others. It returns each key's failure
// count including this attempt.
func (s *Service) admit(ctx context.Context, keys []throttleKey) ([]int, error) {
	for _, k := range keys {
		if err := s.throttle.Blocked(ctx, k.name); err != nil {
			return nil, err
		}
	}
	counts := make([]int, len(keys))
	for i, k := range keys {
		n, err := s.throttle.Attempt(ctx, k.name, k.rule)
		if err != nil {
			return nil, err
		}
		counts[i] = n
	}
	return counts, nil
}

// alertMFAGuessing records in the audit trail that an account's MFA codes
// are being guessed: someone holds its password.
func (s *Service) alertMFAGuessing(ctx context.Context, u db.User, failures int, meta ClientMeta) {
	_ = s.store.AuditInsert(context.WithoutCancel(ctx), db.AuditInsertParams{
		Username: u.Username, Role: u.Role, Action: AlertMFAFailures, Target: fmt.Sprintf("failures=%d", failures),
		ClientAddr: meta.Addr, Status: 401, Outcome: "alert", RequestID: meta.RequestID,
	})
}

// AlertMFAFailures is the audit-trail action of the MFA guessing alert,
// recorded from the MFAFailuresPerAccount.Free-th consecutive wrong code
// on, once per further wrong code.
const AlertMFAFailures = "alert mfa_failures"
