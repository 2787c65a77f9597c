package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/authtest"
)

// By default a session ends after 30 minutes without use and 12 hours
// after sign-in, however busy.
func TestSessionLifetimeDefaults(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)

	idle := f.signIn(t, f.svc, "admin", password, secret)
	f.clk.Advance(29 * time.Minute)
	_, err := f.svc.Authenticate(ctx, idle.Token)
	require.NoError(t, err, "used within the idle limit")
	f.clk.Advance(29 * time.Minute)
	_, err = f.svc.Authenticate(ctx, idle.Token)
	require.NoError(t, err, "the last use restarted the idle limit")
	f.clk.Advance(31 * time.Minute)
	_, err = f.svc.Authenticate(ctx, idle.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)

	start := f.clk.Now()
	busy := f.signIn(t, f.svc, "admin", password, secret)
	require.Equal(t, start.Add(12*time.Hour), busy.Expires)
	for range 12*3 - 1 {
		f.clk.Advance(20 * time.Minute)
		_, err = f.svc.Authenticate(ctx, busy.Token)
		require.NoError(t, err)
	}
	f.clk.Advance(21 * time.Minute)
	_, err = f.svc.Authenticate(ctx, busy.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)
}

// The lifetimes come from the configuration; the sweep removes sessions
// past either one.
func TestSessionLifetimesAreConfigurable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	svc, err := auth.NewService(ctx, f.store, aegis.New(aegis.PGStore{Q: f.store.Queries}, authtest.CheapKDF),
		auth.Config{Password: &authtest.CheapPassword, Now: f.clk.Now, SessionIdle: 5 * time.Minute, SessionMax: time.Hour})
	require.NoError(t, err)
	_, err = svc.BootstrapAegisUnlock(ctx, passphrase, meta)
	require.NoError(t, err)

	start := f.clk.Now()
	a := f.signIn(t, svc, "admin", password, secret)
	require.Equal(t, start.Add(time.Hour), a.Expires)
	f.clk.Advance(6 * time.Minute)
	_, err = svc.Authenticate(ctx, a.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)

	b := f.signIn(t, svc, "admin", password, secret)
	c := f.signIn(t, svc, "admin", password, secret)
	for range 14 {
		f.clk.Advance(4 * time.Minute)
		_, err = svc.Authenticate(ctx, c.Token)
		require.NoError(t, err)
	}
	n, err := svc.DeleteExpiredSessions(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "b idled out; c is still within both limits")
	f.clk.Advance(4 * time.Minute)
	_, err = svc.Authenticate(ctx, c.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)
	_, err = svc.Authenticate(ctx, b.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)
}

// Resetting MFA ends the sessions opened with the old authenticator: the
// operator's own reset keeps only the session that asked, an
// administrator's reset ends them all.
func TestMFAResetEndsSessions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	current := f.signIn(t, f.svc, "admin", password, secret)
	other := f.signIn(t, f.svc, "admin", password, secret)
	p, err := f.svc.Authenticate(ctx, current.Token)
	require.NoError(t, err)
	_, err = f.svc.ResetOwnMFA(ctx, p, password)
	require.NoError(t, err)
	_, err = f.svc.Authenticate(ctx, other.Token)
	requireCode(t, err, cairn.ECodeUnauthorized)
	_, err = f.svc.Authenticate(ctx, current.Token)
	require.NoError(t, err)

	_, err = f.svc.CreateLocalUser(ctx, "oper", password, auth.RoleOperator)
	require.NoError(t, err)
	res, err := f.svc.Login(ctx, "oper", password, meta)
	require.NoError(t, err)
	opSecret := res.MFASetup.Secret
	op1 := f.signIn(t, f.svc, "oper", password, opSecret)
	op2 := f.signIn(t, f.svc, "oper", password, opSecret)
	_, _, err = f.svc.SetMFA(ctx, "oper", auth.MFAReset)
	require.NoError(t, err)
	for _, s := range []auth.Session{op1, op2} {
		_, err = f.svc.Authenticate(ctx, s.Token)
		requireCode(t, err, cairn.ECodeUnauthorized)
	}
	_, err = f.svc.Authenticate(ctx, current.Token)
	require.NoError(t, err, "another operator's reset leaves the admin alone")
}

// Recheck (the event streams' keep-alive) sees a session end but does not
// count as use: an open stream alone does not keep a session alive.
func TestRecheckFollowsTheSessionWithoutTouchingIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	sess := f.signIn(t, f.svc, "admin", password, secret)
	p, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)

	for range 5 {
		f.clk.Advance(5 * time.Minute)
		again, err := f.svc.Recheck(ctx, p)
		require.NoError(t, err)
		require.True(t, p.SameScope(again))
	}
	f.clk.Advance(6 * time.Minute)
	_, err = f.svc.Recheck(ctx, p)
	requireCode(t, err, cairn.ECodeUnauthorized)

	sess = f.signIn(t, f.svc, "admin", password, secret)
	p, err = f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	require.NoError(t, f.svc.Logout(ctx, p, false))
	_, err = f.svc.Recheck(ctx, p)
	requireCode(t, err, cairn.ECodeUnauthorized)
}

// An API token resolves to its owner as the owner is now; an account
// flagged for recovery cannot use its tokens; the sweep deletes tokens a
// week after their expiry; only the token's hash is stored.
func TestAPITokensFollowTheirOwner(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	sess := f.signIn(t, f.svc, "admin", password, secret)
	p, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	tok, err := f.svc.CreateAPIToken(ctx, p, auth.APITokenRequest{Name: "ci", ExpiresInDays: 2, Access: auth.AccessRead})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok.Token, auth.APITokenPrefix))
	row, err := f.store.APITokenGetByHash(ctx, auth.HashToken(tok.Token))
	require.NoError(t, err)
	require.Equal(t, tok.ID, row.ID)

	tp, err := f.svc.AuthenticateAPIToken(ctx, tok.Token)
	require.NoError(t, err)
	require.Equal(t, tok.ID, tp.APITokenID)
	require.Zero(t, tp.SessionID)
	require.True(t, tp.ReadOnly())
	require.True(t, tp.IsAdmin())
	again, err := f.svc.Recheck(ctx, tp)
	require.NoError(t, err)
	require.True(t, tp.SameScope(again))

	// A token cannot mint a token.
	_, err = f.svc.CreateAPIToken(ctx, tp, auth.APITokenRequest{Name: "child", ExpiresInDays: 365, Access: auth.AccessWrite})
	requireCode(t, err, cairn.ECodeForbidden)

	require.NoError(t, f.store.UserFlagAllForRecovery(ctx))
	_, err = f.svc.AuthenticateAPIToken(ctx, tok.Token)
	requireCode(t, err, cairn.ECodeRecoveryRequired)
	_, err = f.svc.Recheck(ctx, tp)
	requireCode(t, err, cairn.ECodeRecoveryRequired)

	f.clk.Advance(2*24*time.Hour + 6*24*time.Hour)
	require.NoError(t, f.svc.DeleteExpiredPendingTokens(ctx))
	_, err = f.store.APITokenGetByHash(ctx, auth.HashToken(tok.Token))
	require.NoError(t, err, "kept (listed as expired) for a week after expiry")
	f.clk.Advance(2 * 24 * time.Hour)
	require.NoError(t, f.svc.DeleteExpiredPendingTokens(ctx))
	_, err = f.store.APITokenGetByHash(ctx, auth.HashToken(tok.Token))
	require.True(t, db.IsNoRows(err), "swept: %v", err)
}

// A password or MFA reset, by an administrator or by the operator, ends
// every API token of the account at once and says how many (issue 21
// item 5): a token leaked with the password does not outlive the reset.
func TestResetsRevokeTheAccountsAPITokens(t *testing.T) {
	t.Parallel()
	resets := map[string]func(t *testing.T, f *fixture, p *auth.Principal) (int64, error){
		"admin resets the password": func(t *testing.T, f *fixture, p *auth.Principal) (int64, error) {
			return f.svc.ResetPassword(context.Background(), p.Username, "a brand new password")
		},
		"admin resets MFA": func(t *testing.T, f *fixture, p *auth.Principal) (int64, error) {
			_, n, err := f.svc.SetMFA(context.Background(), p.Username, auth.MFAReset)
			return n, err
		},
		"operator changes the password": func(t *testing.T, f *fixture, p *auth.Principal) (int64, error) {
			return f.svc.ChangePassword(context.Background(), p, password, "a brand new password")
		},
		"operator resets MFA": func(t *testing.T, f *fixture, p *auth.Principal) (int64, error) {
			return f.svc.ResetOwnMFA(context.Background(), p, password)
		},
	}
	for name, reset := range resets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			ctx := context.Background()
			f.bootstrapped(t)
			_, err := f.svc.CreateLocalUser(ctx, "oper", password, auth.RoleOperator)
			require.NoError(t, err)
			res, err := f.svc.Login(ctx, "oper", password, meta)
			require.NoError(t, err)
			sess := f.signIn(t, f.svc, "oper", password, res.MFASetup.Secret)
			p, err := f.svc.Authenticate(ctx, sess.Token)
			require.NoError(t, err)
			var tokens []string
			for _, access := range []string{auth.AccessRead, auth.AccessWrite} {
				tok, err := f.svc.CreateAPIToken(ctx, p, auth.APITokenRequest{Name: access, ExpiresInDays: 30, Access: access})
				require.NoError(t, err)
				_, err = f.svc.AuthenticateAPIToken(ctx, tok.Token)
				require.NoError(t, err)
				tokens = append(tokens, tok.Token)
			}

			n, err := reset(t, f, p)
			require.NoError(t, err)
			require.EqualValues(t, 2, n)
			for _, tok := range tokens {
				_, err = f.svc.AuthenticateAPIToken(ctx, tok)
				requireCode(t, err, cairn.ECodeUnauthorized)
			}
			left, err := f.svc.ListAPITokens(ctx, p, "")
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

// The re-authentication window opens only with a proof, is per session,
// and closes after auth.ReauthWindow.
func TestReauthWindow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	a := f.signIn(t, f.svc, "admin", password, secret)
	b := f.signIn(t, f.svc, "admin", password, secret)
	pa, err := f.svc.Authenticate(ctx, a.Token)
	require.NoError(t, err)
	pb, err := f.svc.Authenticate(ctx, b.Token)
	require.NoError(t, err)
	requireCode(t, f.svc.RequireRecentReauth(ctx, pa), auth.ECodeReauthRequired)

	require.NoError(t, f.svc.Reauthenticate(ctx, pa, password, f.totp(t, secret)))
	until, err := f.svc.MarkReauthenticated(ctx, pa)
	require.NoError(t, err)
	require.Equal(t, f.clk.Now().Add(auth.ReauthWindow), until)
	require.NoError(t, f.svc.RequireRecentReauth(ctx, pa))
	requireCode(t, f.svc.RequireRecentReauth(ctx, pb), auth.ECodeReauthRequired)

	f.clk.Advance(auth.ReauthWindow + time.Second)
	requireCode(t, f.svc.RequireRecentReauth(ctx, pa), auth.ECodeReauthRequired)

	tok, err := f.svc.CreateAPIToken(ctx, pa, auth.APITokenRequest{Name: "ci", ExpiresInDays: 2, Access: auth.AccessWrite})
	require.NoError(t, err)
	pt, err := f.svc.AuthenticateAPIToken(ctx, tok.Token)
	require.NoError(t, err)
	_, err = f.svc.MarkReauthenticated(ctx, pt)
	requireCode(t, err, auth.ECodeReauthRequired)
	requireCode(t, f.svc.RequireRecentReauth(ctx, pt), auth.ECodeReauthRequired)
}

// Only a read token without read:device-content is kept from device
// content; the scope survives Recheck (an event stream's token).
func TestAPITokenDeviceContentScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	secret := f.bootstrapped(t)
	sess := f.signIn(t, f.svc, "admin", password, secret)
	p, err := f.svc.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	require.True(t, p.CanReadDeviceContent(), "a session")
	for _, c := range []struct {
		name   string
		access string
		scopes []string
		can    bool
	}{
		{"read", auth.AccessRead, nil, false},
		{"read with scope", auth.AccessRead, []string{auth.ScopeReadDeviceContent}, true},
		{"write", auth.AccessWrite, nil, true},
	} {
		tok, err := f.svc.CreateAPIToken(ctx, p, auth.APITokenRequest{Name: c.name, ExpiresInDays: 2, Access: c.access, Scopes: c.scopes})
		require.NoError(t, err, c.name)
		require.NotNil(t, tok.Scopes, c.name)
		tp, err := f.svc.AuthenticateAPIToken(ctx, tok.Token)
		require.NoError(t, err, c.name)
		require.Equal(t, c.can, tp.CanReadDeviceContent(), c.name)
		again, err := f.svc.Recheck(ctx, tp)
		require.NoError(t, err, c.name)
		require.Equal(t, c.can, again.CanReadDeviceContent(), c.name)
		require.True(t, tp.SameScope(again), c.name)
	}
	_, err = f.svc.CreateAPIToken(ctx, p, auth.APITokenRequest{Name: "w", ExpiresInDays: 2, Access: auth.AccessWrite,
		Scopes: []string{auth.ScopeReadDeviceContent}})
	requireCode(t, err, cairn.ECodeValidation)
}
