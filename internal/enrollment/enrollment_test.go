package enrollment

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// setupNonces returns nonces over a fresh database and a settable clock.
func setupNonces(t testing.TB) (*nonces, *authtest.Clock) {
	t.Helper()
	clk := authtest.NewClock()
	store := pgtest.NewDB(t)
	cipher := aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF)
	require.NoError(t, cipher.Setup(context.Background(), "correct horse battery staple"))
	key := aegis.NewServerKey(store.Queries, cipher, aegis.KeySpec{Name: "enroll-nonce-hmac", Size: 32})
	return &nonces{store: store, key: key, now: clk.Now}, clk
}

func issue(t *testing.T, n *nonces) (string, time.Time) {
	t.Helper()
	nonce, exp, err := n.Issue(context.Background())
	require.NoError(t, err)
	return nonce, exp
}

func TestNonceLifecycle(t *testing.T) {
	t.Parallel()
	n, clk := setupNonces(t)
	ctx := context.Background()

	good, exp := issue(t, n)
	require.Equal(t, clk.Now().Add(NonceTTL).Truncate(time.Second), exp)
	require.NoError(t, n.Use(ctx, good))
	require.ErrorContains(t, n.Use(ctx, good), "already used")

	late, _ := issue(t, n)
	clk.Advance(NonceTTL + time.Second)
	err := n.Use(ctx, late)
	require.Equal(t, cairn.ECodeValidation, cairn.ErrorCode(err))
	require.ErrorContains(t, err, "expired")

	fresh, _ := issue(t, n)
	body, mac, _ := strings.Cut(fresh, ".")
	for _, bad := range []string{"", "no-dot", body + ".", "." + mac, strings.ToUpper(body) + "." + mac, body + "." + mac + "x"} {
		require.Equal(t, cairn.ECodeValidation, cairn.ErrorCode(n.Use(ctx, bad)), "%q", bad)
	}
	require.NoError(t, n.Use(ctx, fresh), "refused tampered copies did not use up the real one")
}

func TestCodesAreTypeable(t *testing.T) {
	t.Parallel()
	c := newCode()
	require.Regexp(t, `^[a-z2-7]{8}-[a-z2-7]{8}-[a-z2-7]{8}-[a-z2-7]{8}$`, c)
	require.NotEqual(t, c, newCode())
	for _, typed := range []string{strings.ToUpper(c), " " + c + " ", strings.ReplaceAll(c, "-", ""), strings.ReplaceAll(c, "-", " ")} {
		require.Equal(t, hashCode(c), hashCode(typed), "%q", typed)
	}
	require.NotEqual(t, hashCode(c), hashCode(newCode()))
}
