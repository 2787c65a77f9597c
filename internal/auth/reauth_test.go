package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// Sensitive actions ask for the password and a fresh TOTP code again: a
// session alone, a wrong password, a missing, wrong or replayed code are
// all refused.
func TestReauthenticateNeedsPasswordAndAFreshCode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	p, err := f.svc.Authenticate(ctx, f.signIn(t, f.svc, "admin", password, secret).Token)
	require.NoError(t, err)

	requireCode(t, f.svc.Reauthenticate(ctx, p, "", ""), auth.ECodeReauthRequired)
	requireCode(t, f.svc.Reauthenticate(ctx, p, "not the password", f.totp(t, secret)), auth.ECodeReauthRequired)
	requireCode(t, f.svc.Reauthenticate(ctx, p, password, ""), auth.ECodeReauthRequired)
	requireCode(t, f.svc.Reauthenticate(ctx, p, password, "000000"), auth.ECodeReauthRequired)

	f.clk.Advance(30 * time.Second)
	code := f.totp(t, secret)
	require.NoError(t, f.svc.Reauthenticate(ctx, p, password, code))
	requireCode(t, f.svc.Reauthenticate(ctx, p, password, code), auth.ECodeReauthRequired)
}

// The cipher's unlock and rotation are for administrators, and passphrase
// guesses are budgeted per operator.
func TestCipherUnlockIsForAdministratorsWithinABudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	admin, err := f.svc.Authenticate(ctx, f.signIn(t, f.svc, "admin", password, secret).Token)
	require.NoError(t, err)
	_, err = f.svc.CreateLocalUser(ctx, "oper", password, auth.RoleOperator)
	require.NoError(t, err)
	u, err := f.store.UserGetByUsername(ctx, "oper")
	require.NoError(t, err)
	operator := &auth.Principal{UserID: u.ID, Username: "oper", Role: auth.RoleOperator}

	requireCode(t, f.svc.UnlockCipher(ctx, operator, passphrase, meta), cairn.ECodeForbidden)
	requireCode(t, f.svc.RotateCipher(ctx, operator, passphrase, "a brand new passphrase", meta), cairn.ECodeForbidden)

	require.NoError(t, f.svc.UnlockCipher(ctx, admin, passphrase, meta))
	var last error
	for i := 0; i < auth.PassphrasePerUser.Limit+1 && !cairn.IsCode(last, cairn.ECodeRateLimited); i++ {
		last = f.svc.UnlockCipher(ctx, admin, "a wrong passphrase", auth.ClientMeta{Addr: "192.0.2.99"})
	}
	requireCode(t, last, cairn.ECodeRateLimited)
}
