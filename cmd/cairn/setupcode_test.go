package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// The setup-code file follows setup on every replica: written (0600) while
// setup is pending, kept while this replica's code is still valid, removed
// once any replica finishes setup, and a new code after a forced reset.
func TestSetupCodeFileFollowsSetup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	clk := authtest.NewClock()
	newSvc := func() *auth.Service {
		svc, err := auth.NewService(ctx, store, aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF),
			auth.Config{Password: &authtest.CheapPassword, Now: clk.Now})
		require.NoError(t, err)
		return svc
	}
	svc, other := newSvc(), newSvc()
	dir := t.TempDir()
	sc := newSetupCode(svc, dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	file := filepath.Join(dir, "setup-code")

	code, err := sc.reconcile(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, code)
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, code, strings.TrimSpace(string(raw)))
	again, err := sc.reconcile(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "one code per process while it is valid")

	// Another replica finishes setup with this replica's code.
	_, err = other.BootstrapAegisSetup(ctx, "correct horse battery staple", code)
	require.NoError(t, err)
	e, err := other.BootstrapAdminSetup(ctx, "admin", "a long enough password", code)
	require.NoError(t, err)
	_, err = other.BootstrapVerifyMFA(ctx, e.PendingToken, authtest.TOTP(t, e.MFA.Secret, clk.Now()))
	require.NoError(t, err)
	_, err = sc.reconcile(ctx)
	require.NoError(t, err)
	require.NoFileExists(t, file)

	// A forced reset makes setup pending again: a new code.
	clk.Advance(time.Minute)
	res, err := other.Login(ctx, "admin", "a long enough password", auth.ClientMeta{Addr: "192.0.2.1"})
	require.NoError(t, err)
	sess, err := other.VerifyMFA(ctx, res.PendingToken, authtest.TOTP(t, e.MFA.Secret, clk.Now()), auth.ClientMeta{Addr: "192.0.2.1"})
	require.NoError(t, err)
	admin, err := other.Authenticate(ctx, sess.Token)
	require.NoError(t, err)
	_, err = other.ForceReset(ctx, admin)
	require.NoError(t, err)
	fresh, err := sc.reconcile(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, fresh)
	require.NotEqual(t, code, fresh)
	require.FileExists(t, file)
}
