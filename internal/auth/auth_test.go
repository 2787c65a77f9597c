package auth_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var meta = auth.ClientMeta{Addr: "192.0.2.10", UserAgent: "test"}

const (
	passphrase = "correct horse battery staple"
	password   = "a long enough password"
)

type fixture struct {
	store *db.Store
	clk   *authtest.Clock
	svc   *auth.Service
	// code is the first-run setup code `cairn serve` would have printed.
	code string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	clk := authtest.NewClock()
	svc := newService(t, store, clk)
	return &fixture{store: store, clk: clk, svc: svc, code: authtest.SetupCode(t, svc)}
}

// newService is a fresh Engine process over the same database: its cipher
// starts locked.
func newService(t *testing.T, store *db.Store, clk *authtest.Clock) *auth.Service {
	t.Helper()
	svc, err := auth.NewService(context.Background(), store, aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF),
		auth.Config{Password: &authtest.CheapPassword, Now: clk.Now})
	require.NoError(t, err)
	return svc
}

// totp asks oathtool, an independent RFC 6238 implementation, for the code
// at the fixture's current time.
func (f *fixture) totp(t *testing.T, secret string) string {
	t.Helper()
	return authtest.TOTP(t, secret, f.clk.Now())
}

// bootstrapped runs the whole first-run journey and returns the admin's
// TOTP secret.
func (f *fixture) bootstrapped(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	_, err := f.svc.BootstrapAegisSetup(ctx, passphrase, f.code)
	require.NoError(t, err)
	e, err := f.svc.BootstrapAdminSetup(ctx, "Admin", password, f.code)
	require.NoError(t, err)
	phase, err := f.svc.BootstrapVerifyMFA(ctx, e.PendingToken, f.totp(t, e.MFA.Secret))
	require.NoError(t, err)
	require.Equal(t, auth.PhaseLogin, phase)
	f.clk.Advance(30 * time.Second)
	return e.MFA.Secret
}

func (f *fixture) signIn(t *testing.T, svc *auth.Service, username, pw, secret string) auth.Session {
	t.Helper()
	ctx := context.Background()
	res, err := svc.Login(ctx, username, pw, meta)
	require.NoError(t, err)
	require.True(t, res.MFARequired)
	sess, err := svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, secret), meta)
	require.NoError(t, err)
	f.clk.Advance(30 * time.Second)
	return sess
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, cairn.ErrorCode(err), "error: %v", err)
}

func requireField(t *testing.T, err error, field string) {
	t.Helper()
	requireCode(t, err, cairn.ECodeValidation)
	require.Contains(t, err.(*cairn.Error).Fields, field)
}

func TestFirstRunJourneyThenRestartNeedsUnlock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()

	phase, err := f.svc.Phase(ctx)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAegisSetup, phase)
	_, err = f.svc.Login(ctx, "admin", password, meta)
	requireCode(t, err, cairn.ECodeBootstrapRequired)
	_, err = f.svc.BootstrapAdminSetup(ctx, "admin", password, f.code)
	requireCode(t, err, cairn.ECodeWrongPhase)

	phase, err = f.svc.BootstrapAegisSetup(ctx, passphrase, f.code)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAdminSetup, phase)

	_, err = f.svc.BootstrapAdminSetup(ctx, "x", "short", f.code)
	requireField(t, err, "username")
	requireField(t, err, "password")

	e, err := f.svc.BootstrapAdminSetup(ctx, "Admin", password, f.code)
	require.NoError(t, err)
	require.Contains(t, e.MFA.OTPAuthURL, "otpauth://totp/Cairn:admin")
	_, err = f.svc.BootstrapVerifyMFA(ctx, e.PendingToken, "000000")
	requireCode(t, err, cairn.ECodeInvalidMFACode)
	phase, err = f.svc.BootstrapVerifyMFA(ctx, e.PendingToken, f.totp(t, e.MFA.Secret))
	require.NoError(t, err)
	require.Equal(t, auth.PhaseLogin, phase)
	f.clk.Advance(30 * time.Second)

	_, err = f.svc.BootstrapAegisSetup(ctx, passphrase, f.code)
	requireCode(t, err, cairn.ECodeBootstrapFinished)
	_, err = f.svc.Login(ctx, "admin", "not the password!", meta)
	requireCode(t, err, cairn.ECodeInvalidCredentials)
	_, err = f.svc.Login(ctx, "nobody", password, meta)
	requireCode(t, err, cairn.ECodeInvalidCredentials)

	res, err := f.svc.Login(ctx, "ADMIN", password, meta)
	require.NoError(t, err)
	require.Nil(t, res.MFASetup, "a verified authenticator is not shown again")
	sess, err := f.svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, e.MFA.Secret), meta)
	require.NoError(t, err)
	require.Equal(t, "admin", sess.User.Username)
	p, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	require.True(t, p.IsAdmin())
	require.True(t, p.CheckCSRF(sess.CSRF))
	require.False(t, p.CheckCSRF(sess.Token))
	f.clk.Advance(30 * time.Second)

	// Secrets at rest are sealed, never plain.
	u, err := f.store.UserGetByUsername(ctx, "admin")
	require.NoError(t, err)
	require.NotContains(t, string(u.TotpSealed), e.MFA.Secret)
	require.NotContains(t, string(u.PasswordSealed), "argon2id")

	// A restarted Engine holds no key until the passphrase is given again.
	restarted := newService(t, f.store, f.clk)
	phase, err = restarted.Phase(ctx)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAegisUnlock, phase)
	_, err = restarted.Login(ctx, "admin", password, meta)
	requireCode(t, err, cairn.ECodeAegisLocked)
	_, err = restarted.BootstrapAegisUnlock(ctx, "the wrong passphrase", meta)
	requireCode(t, err, cairn.ECodeInvalidPassphrase)
	phase, err = restarted.BootstrapAegisUnlock(ctx, passphrase, meta)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseLogin, phase)
	f.signIn(t, restarted, "admin", password, e.MFA.Secret)
}

func TestUnfinishedAdminSetupCanBeRedone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	_, err := f.svc.BootstrapAegisSetup(ctx, passphrase, f.code)
	require.NoError(t, err)
	first, err := f.svc.BootstrapAdminSetup(ctx, "first", password, f.code)
	require.NoError(t, err)
	second, err := f.svc.BootstrapAdminSetup(ctx, "second", password, f.code)
	require.NoError(t, err)
	_, err = f.svc.BootstrapVerifyMFA(ctx, first.PendingToken, f.totp(t, first.MFA.Secret))
	requireCode(t, err, cairn.ECodeInvalidPending)
	_, err = f.svc.BootstrapVerifyMFA(ctx, second.PendingToken, f.totp(t, second.MFA.Secret))
	require.NoError(t, err)
}

func TestCodesAndPendingTokensAreSingleUse(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)

	res, err := f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err)
	code := f.totp(t, secret)
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, code, meta)
	require.NoError(t, err)

	res2, err := f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err)
	_, err = f.svc.VerifyMFA(ctx, res2.PendingToken, code, meta)
	requireCode(t, err, cairn.ECodeInvalidMFACode) // same time step: replay

	f.clk.Advance(30 * time.Second)
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, secret), meta)
	requireCode(t, err, cairn.ECodeInvalidPending) // spent token

	_, err = f.svc.VerifyMFA(ctx, res2.PendingToken+"x", f.totp(t, secret), meta)
	requireCode(t, err, cairn.ECodeInvalidPending) // forged signature

	f.clk.Advance(6 * time.Minute)
	_, err = f.svc.VerifyMFA(ctx, res2.PendingToken, f.totp(t, secret), meta)
	requireCode(t, err, cairn.ECodeInvalidPending) // expired
}

func TestWrongCodesExhaustThePendingToken(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	res, err := f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err)
	for range auth.CodePerPending.Limit {
		_, err = f.svc.VerifyMFA(ctx, res.PendingToken, "123456", meta)
		requireCode(t, err, cairn.ECodeInvalidMFACode)
	}
	_, err = f.svc.VerifyMFA(ctx, res.PendingToken, f.totp(t, secret), meta)
	requireCode(t, err, cairn.ECodeRateLimited)
}

func TestSessionsExpireEndAndSurvivePasswordChangeOnlyForTheCaller(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	a := f.signIn(t, f.svc, "admin", password, secret)
	b := f.signIn(t, f.svc, "admin", password, secret)
	pa, err := f.svc.Authenticate(ctx, a.Token)
	require.NoError(t, err)

	_, err = f.svc.ChangePassword(ctx, pa, "not the password!", "another long password")
	requireField(t, err, "current_password")
	_, err = f.svc.ChangePassword(ctx, pa, password, "short")
	requireField(t, err, "new_password")
	_, err = f.svc.ChangePassword(ctx, pa, password, "another long password")
	require.NoError(t, err)
	_, err = f.svc.Authenticate(ctx, b.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)
	_, err = f.svc.Authenticate(ctx, a.Token)
	require.NoError(t, err)
	_, err = f.svc.Login(ctx, "admin", password, meta)
	requireCode(t, err, cairn.ECodeInvalidCredentials)

	require.NoError(t, f.svc.Logout(ctx, pa, false))
	_, err = f.svc.Authenticate(ctx, a.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)

	c := f.signIn(t, f.svc, "admin", "another long password", secret)
	f.clk.Advance(13 * time.Hour) // past the idle limit
	_, err = f.svc.Authenticate(ctx, c.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)
}

func TestMFAResetShowsANewAuthenticatorAtNextLogin(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	sess := f.signIn(t, f.svc, "admin", password, secret)
	p, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	_, err = f.svc.ResetOwnMFA(ctx, p, "wrong password!!")
	requireField(t, err, "password")
	_, err = f.svc.ResetOwnMFA(ctx, p, password)
	require.NoError(t, err)
	phase, err := f.svc.Phase(ctx)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseLogin, phase, "the only admin resetting MFA must not reopen bootstrap")

	res, err := f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err)
	require.NotNil(t, res.MFASetup)
	require.NotEqual(t, secret, res.MFASetup.Secret)
	again, err := f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err)
	require.Equal(t, res.MFASetup.Secret, again.MFASetup.Secret, "retrying shows the same QR code")
	_, err = f.svc.VerifyMFA(ctx, again.PendingToken, f.totp(t, res.MFASetup.Secret), meta)
	require.NoError(t, err)
}

func TestLoginWithoutMFAWhenAnAdminDisabledIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.bootstrapped(t)
	u, err := f.store.UserGetByUsername(ctx, "admin")
	require.NoError(t, err)
	require.NoError(t, f.store.UserSetMFARequired(ctx, db.UserSetMFARequiredParams{ID: u.ID, MfaRequired: false}))
	res, err := f.svc.Login(ctx, "admin", password, meta)
	require.NoError(t, err)
	require.False(t, res.MFARequired)
	require.NotNil(t, res.Session)
	_, err = f.svc.Authenticate(ctx, res.Session.Token)
	require.NoError(t, err)
}

func TestForceResetFlagsAccountsAndRecoveryNeedsTheCode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	sess := f.signIn(t, f.svc, "admin", password, secret)
	admin, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)

	_, err = f.svc.ForceReset(ctx, &auth.Principal{UserID: admin.UserID, Username: "admin", Role: auth.RoleOperator})
	requireCode(t, err, cairn.ECodeForbidden)

	codes, err := f.svc.ForceReset(ctx, admin)
	require.NoError(t, err)
	code := codes.Recovery
	require.NotEmpty(t, code)
	_, err = f.svc.Authenticate(ctx, sess.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)
	phase, err := f.svc.Phase(ctx)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAegisSetup, phase)

	phase, err = f.svc.BootstrapAegisSetup(ctx, "a brand new passphrase", codes.Setup)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAdminRecovery, phase)
	_, err = f.svc.Login(ctx, "admin", password, meta)
	requireCode(t, err, cairn.ECodeBootstrapRequired)
	_, err = f.svc.BootstrapAdminSetup(ctx, "intruder", password, f.code)
	requireCode(t, err, cairn.ECodeWrongPhase)

	_, err = f.svc.BootstrapAdminRecover(ctx, "admin", "recovered password", "not-the-code", meta)
	requireField(t, err, "recovery_code")
	_, err = f.svc.BootstrapAdminRecover(ctx, "someone", "recovered password", code, meta)
	requireField(t, err, "username")
	e, err := f.svc.BootstrapAdminRecover(ctx, "admin", "recovered password", code, meta)
	require.NoError(t, err)
	phase, err = f.svc.Phase(ctx)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAdminRecovery, phase, "recovery completes only with the new authenticator")
	phase, err = f.svc.BootstrapVerifyMFA(ctx, e.PendingToken, f.totp(t, e.MFA.Secret))
	require.NoError(t, err)
	require.Equal(t, auth.PhaseLogin, phase)
	f.clk.Advance(30 * time.Second)
	f.signIn(t, f.svc, "admin", "recovered password", e.MFA.Secret)

	// The code was spent with the recovery.
	_, err = f.svc.IssueRecoveryCode(ctx)
	requireCode(t, err, cairn.ECodeWrongPhase)
}
