package auth_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/authtest"
)

func requireRetryAfter(t *testing.T, err error, seconds int) {
	t.Helper()
	requireCode(t, err, cairn.ECodeRateLimited)
	require.Equal(t, seconds, err.(*cairn.Error).RetryAfterSeconds)
}

// Failures at one username, from any number of addresses, earn delays
// that double up to a minute: a slowdown for the owner, never a lock.
func TestFailedPasswordsEarnIncreasingDelaysPerUsername(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.bootstrapped(t)
	rule := auth.PasswordFailuresPerUser
	from := func(i int) auth.ClientMeta { return auth.ClientMeta{Addr: fmt.Sprintf("198.51.100.%d", i)} }
	for i := range rule.Free {
		_, err := f.svc.Login(ctx, "admin", "wrong password!!", from(i))
		requireCode(t, err, cairn.ECodeInvalidCredentials)
	}
	// Even the right password waits, from another address too.
	_, err := f.svc.Login(ctx, "admin", password, from(99))
	requireRetryAfter(t, err, 1)
	for _, wait := range []int{1, 2, 4, 8, 16, 32, 60, 60} {
		f.clk.Advance(time.Duration(wait) * time.Second)
		_, err = f.svc.Login(ctx, "admin", "wrong password!!", from(wait))
		requireCode(t, err, cairn.ECodeInvalidCredentials)
		_, err = f.svc.Login(ctx, "admin", password, from(wait))
		require.Equal(t, cairn.ECodeRateLimited, cairn.ErrorCode(err))
		require.LessOrEqual(t, err.(*cairn.Error).RetryAfterSeconds, 60, "the delay is capped, not a lock")
	}
	f.clk.Advance(time.Minute)
	_, err = f.svc.Login(ctx, "admin", password, from(99))
	require.NoError(t, err)
	// The success forgot the failures.
	_, err = f.svc.Login(ctx, "admin", "wrong password!!", from(1))
	requireCode(t, err, cairn.ECodeInvalidCredentials)
	_, err = f.svc.Login(ctx, "admin", password, from(1))
	require.NoError(t, err)
}

// Only failures count: an office behind one address signs in as often as
// it likes.
func TestSuccessfulSignInsAreNotCounted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.bootstrapped(t)
	for range 2 * auth.FailuresPerAddress.Free {
		_, err := f.svc.Login(ctx, "admin", password, meta)
		require.NoError(t, err)
	}
}

// A correct password no longer buys fresh MFA guesses: wrong codes count
// per account across pending tokens, delay the next code, and raise an
// alert in the audit trail.
func TestMFAFailuresCountPerAccountAcrossPasswordLogins(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	rule := auth.MFAFailuresPerAccount
	for i := range rule.Free {
		res, err := f.svc.Login(ctx, "admin", password, auth.ClientMeta{Addr: fmt.Sprintf("203.0.113.%d", i)})
		require.NoError(t, err)
		_, err = f.svc.VerifyMFA(ctx, res.PendingToken, "000000", auth.ClientMeta{Addr: fmt.Sprintf("203.0.113.%d", i)})
		requireCode(t, err, cairn.ECodeInvalidMFACode)
	}
	res, err := f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err, "the password step is not what is being guessed")
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, secret), meta)
	requireRetryAfter(t, err, 1)

	alerts := func() []db.AuditLog {
		rows, err := f.store.AuditList(ctx, db.AuditListParams{Username: "admin", MaxRows: 100})
		require.NoError(t, err)
		var out []db.AuditLog
		for _, r := range rows {
			if r.Action == auth.AlertMFAFailures {
				out = append(out, r)
			}
		}
		return out
	}
	got := alerts()
	require.Len(t, got, 1)
	require.Equal(t, fmt.Sprintf("failures=%d", rule.Free), got[0].Target)
	require.Equal(t, "alert", got[0].Outcome)

	f.clk.Advance(time.Second)
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, "000000", meta)
	requireCode(t, err, cairn.ECodeInvalidMFACode)
	require.Len(t, alerts(), 2)
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, secret), meta)
	requireRetryAfter(t, err, 2)

	f.clk.Advance(2 * time.Second)
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, secret), meta)
	require.NoError(t, err)
	// The right code forgot the failures.
	f.clk.Advance(30 * time.Second)
	res, err = f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err)
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, "000000", meta)
	requireCode(t, err, cairn.ECodeInvalidMFACode)
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, secret), meta)
	require.NoError(t, err)
}

// nowhere is a directory that knows nobody.
type nowhere struct{}

func (nowhere) SignIn(context.Context, string, string) (db.User, error) {
	return db.User{}, cairn.Errorf(cairn.ECodeInvalidCredentials, "the username or password is not correct")
}

// Unknown names, directory names and wrong passwords take the same path:
// one password hash verification each (a throwaway hash where there is
// none), so the answer time does not tell them apart.
func TestUnknownAndKnownUsernamesTakeTheSamePath(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.bootstrapped(t)
	for name, dir := range map[string]auth.Directory{"local only": nil, "with a directory": nowhere{}} {
		svc, err := auth.NewService(ctx, f.store, aegis.New(aegis.PGStore{Q: f.store.Queries}, authtest.CheapKDF),
			auth.Config{Password: &authtest.CheapPassword, Now: f.clk.Now, Directory: dir})
		require.NoError(t, err)
		_, err = svc.BootstrapAegisUnlock(ctx, passphrase, meta)
		require.NoError(t, err)
		for i, username := range []string{"admin", "nobody-here"} {
			before := svc.HashChecks()
			_, err := svc.Login(ctx, username, "wrong password!!", auth.ClientMeta{Addr: fmt.Sprintf("192.0.2.%d", i)})
			requireCode(t, err, cairn.ECodeInvalidCredentials)
			require.Equal(t, int64(1), svc.HashChecks()-before, "%s: %s", name, username)
		}
	}
}

// An account's state (here: awaiting recovery) is never answered before
// its password is checked.
func TestAccountStateIsNotAnsweredBeforeThePassword(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	_, err := f.svc.CreateLocalUser(ctx, "operator1", password, auth.RoleOperator)
	require.NoError(t, err)
	sess := f.signIn(t, f.svc, "admin", password, secret)
	admin, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	codes, err := f.svc.ForceReset(ctx, admin)
	require.NoError(t, err)
	_, err = f.svc.BootstrapAegisSetup(ctx, "a brand new passphrase", codes.Setup)
	require.NoError(t, err)
	e, err := f.svc.BootstrapAdminRecover(ctx, "admin", "recovered password", codes.Recovery, meta)
	require.NoError(t, err)
	_, err = f.svc.BootstrapVerifyMFA(ctx, e.PendingToken, f.totp(t, e.MFA.Secret))
	require.NoError(t, err)

	before := f.svc.HashChecks()
	_, err = f.svc.Login(ctx, "operator1", password, meta)
	requireCode(t, err, cairn.ECodeInvalidCredentials)
	require.Equal(t, int64(1), f.svc.HashChecks()-before)
}

// A stolen session cannot guess the password through the re-authenticated
// actions: their failures share the username's sign-in budget.
func TestReauthenticationSharesTheSignInBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	sess := f.signIn(t, f.svc, "admin", password, secret)
	p, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	for range auth.PasswordFailuresPerUser.Free {
		_, err := f.svc.ChangePassword(ctx, p, "wrong password!!", "a new long password")
		requireField(t, err, "current_password")
	}
	_, err = f.svc.ResetOwnMFA(ctx, p, password)
	requireRetryAfter(t, err, 1)
	_, err = f.svc.Login(ctx, "admin", password, meta)
	requireRetryAfter(t, err, 1)
	f.clk.Advance(time.Second)
	_, err = f.svc.ChangePassword(ctx, p, password, "a new long password")
	require.NoError(t, err)
}
