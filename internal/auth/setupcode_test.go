package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/authtest"
)

// Whoever reaches a fresh deployment first does not own it: each setup
// step that creates the cipher or the first administrator needs a setup
// code, any replica's code works, and finishing setup spends them all.
func TestFirstRunSetupNeedsASetupCode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()

	pending, err := f.svc.SetupPending(ctx)
	require.NoError(t, err)
	require.True(t, pending)
	for _, code := range []string{"", "AAAAA-AAAAA-AAAAA-AAAAA", f.code + "X"} {
		_, err = f.svc.BootstrapAegisSetup(ctx, passphrase, code)
		requireCode(t, err, auth.ECodeSetupCodeRequired)
	}
	// A wrong code is refused before the passphrase is even looked at.
	_, err = f.svc.BootstrapAegisSetup(ctx, "short", "")
	requireCode(t, err, auth.ECodeSetupCodeRequired)

	// Another replica's code, typed in lower case without dashes.
	other := newService(t, f.store, f.clk)
	otherCode := authtest.SetupCode(t, other)
	typed := strings.ToLower(strings.ReplaceAll(otherCode, "-", ""))
	phase, err := f.svc.BootstrapAegisSetup(ctx, passphrase, typed)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAdminSetup, phase)

	_, err = f.svc.BootstrapAdminSetup(ctx, "admin", password, "")
	requireCode(t, err, auth.ECodeSetupCodeRequired)
	first, err := f.svc.BootstrapAdminSetup(ctx, "admin", password, f.code)
	require.NoError(t, err)
	// The unconfirmed administrator is not replaced without the code.
	_, err = f.svc.BootstrapAdminSetup(ctx, "intruder", password, "")
	requireCode(t, err, auth.ECodeSetupCodeRequired)
	_, err = f.svc.BootstrapAdminSetup(ctx, "intruder", password, "BBBBB-BBBBB-BBBBB-BBBBB")
	requireCode(t, err, auth.ECodeSetupCodeRequired)
	phase, err = f.svc.BootstrapVerifyMFA(ctx, first.PendingToken, f.totp(t, first.MFA.Secret))
	require.NoError(t, err)
	require.Equal(t, auth.PhaseLogin, phase)

	// Spent: no code is left, and none is needed.
	hashes, err := f.store.SetupCodeHashes(ctx)
	require.NoError(t, err)
	require.Empty(t, hashes)
	pending, err = f.svc.SetupPending(ctx)
	require.NoError(t, err)
	require.False(t, pending)
}

// After a forced reset the new cipher needs a setup code too (the reset
// hands one to the administrator); it ends with the cipher's setup, since
// recovery needs the recovery code instead.
func TestSetupAfterForceResetNeedsTheResetsSetupCode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	admin, err := f.svc.Authenticate(ctx, f.signIn(t, f.svc, "admin", password, secret).Token)
	require.NoError(t, err)
	codes, err := f.svc.ForceReset(ctx, admin)
	require.NoError(t, err)
	pending, err := f.svc.SetupPending(ctx)
	require.NoError(t, err)
	require.True(t, pending)

	_, err = f.svc.BootstrapAegisSetup(ctx, "a brand new passphrase", f.code)
	requireCode(t, err, auth.ECodeSetupCodeRequired)
	phase, err := f.svc.BootstrapAegisSetup(ctx, "a brand new passphrase", codes.Setup)
	require.NoError(t, err)
	require.Equal(t, auth.PhaseAdminRecovery, phase)
	hashes, err := f.store.SetupCodeHashes(ctx)
	require.NoError(t, err)
	require.Empty(t, hashes)
	_, err = f.svc.BootstrapAdminRecover(ctx, "admin", "recovered password", codes.Recovery, meta)
	require.NoError(t, err)
}

func TestSetupCodesAreRandomAndReadable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other := authtest.SetupCode(t, f.svc)
	require.NotEqual(t, f.code, other)
	require.Regexp(t, `^[A-Z2-7]{5}-[A-Z2-7]{5}-[A-Z2-7]{5}-[A-Z2-7]{5}$`, f.code)
}
