package aegis_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const pass = "correct horse battery staple"

var edSpec = aegis.KeySpec{Name: "device-token-ed25519", Size: ed25519.SeedSize,
	Public: func(seed []byte) []byte { return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey) }}

func pgCipher(t *testing.T, store *db.Store) *aegis.Cipher {
	t.Helper()
	c := aegis.New(aegis.PGStore{Q: store.Queries, S: store}, authtest.CheapKDF)
	c.Register(aegis.ServerKeyColumns()...)
	return c
}

// A key an older Engine stored in plaintext is sealed at the first unlock
// (issue 13 item 14); its public half stays readable without the cipher.
func TestServerKeyPlaintextIsSealedOnUnlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	require.NoError(t, pgCipher(t, store).Setup(ctx, pass))
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	require.NoError(t, store.ServerKeyInsertPlaintext(ctx, db.ServerKeyInsertPlaintextParams{Name: edSpec.Name, Key: seed}))

	c := pgCipher(t, store) // a restarted process: locked
	key := aegis.NewServerKey(store.Queries, c, edSpec)
	_, err := key.Secret(ctx)
	require.True(t, cairn.IsCode(err, cairn.ECodeAegisLocked), "%v", err)
	wantPub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	pub, err := key.Public(ctx)
	require.NoError(t, err)
	require.Equal(t, []byte(wantPub), pub)

	require.NoError(t, c.Unlock(ctx, pass))
	row, err := store.ServerKeyGet(ctx, edSpec.Name)
	require.NoError(t, err)
	require.Nil(t, row.Key, "the plaintext is gone after the unlock")
	require.NotNil(t, row.KeySealed)
	require.False(t, bytes.Contains(row.KeySealed, seed))
	require.Equal(t, []byte(wantPub), row.PublicKey)
	got, err := key.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, seed, got)

	locked := aegis.NewServerKey(store.Queries, pgCipher(t, store), edSpec)
	pub, err = locked.Public(ctx)
	require.NoError(t, err)
	require.Equal(t, []byte(wantPub), pub, "a locked process verifies with the stored public half")
}

// A new key is created sealed, once for all replicas; a data-key rotation
// re-seals it and a force reset replaces it.
func TestServerKeyLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	a, b := pgCipher(t, store), pgCipher(t, store)
	require.NoError(t, a.Setup(ctx, pass))
	require.NoError(t, b.Unlock(ctx, pass))
	ka, kb := aegis.NewServerKey(store.Queries, a, edSpec), aegis.NewServerKey(store.Queries, b, edSpec)
	sa, err := ka.Secret(ctx)
	require.NoError(t, err)
	sb, err := kb.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, sa, sb, "replicas share one key")
	row, err := store.ServerKeyGet(ctx, edSpec.Name)
	require.NoError(t, err)
	require.Nil(t, row.Key)
	require.False(t, bytes.Contains(row.KeySealed, sa))

	require.NoError(t, a.Rotate(ctx, pass, "another long passphrase"))
	rotated, err := store.ServerKeyGet(ctx, edSpec.Name)
	require.NoError(t, err)
	require.NotEqual(t, row.KeySealed, rotated.KeySealed, "re-sealed under the new data key")
	require.Equal(t, a.KeyID(), rotated.KeySealed[1:9])
	fresh := pgCipher(t, store)
	require.NoError(t, fresh.Unlock(ctx, "another long passphrase"))
	got, err := aegis.NewServerKey(store.Queries, fresh, edSpec).Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, sa, got, "the key itself survives a rotation")

	// A force reset: the old sealed key is unreadable, so a new one
	// replaces it.
	require.NoError(t, store.AegisStateDelete(ctx))
	reset := pgCipher(t, store)
	require.NoError(t, reset.Setup(ctx, "the replacement passphrase"))
	k := aegis.NewServerKey(store.Queries, reset, edSpec)
	replaced, err := k.Secret(ctx)
	require.NoError(t, err)
	require.NotEqual(t, sa, replaced)
	pub, err := k.Public(ctx)
	require.NoError(t, err)
	require.Equal(t, edSpec.Public(replaced), pub)
}

// A rotation that fails part-way stores nothing: the transaction that
// swaps the key also holds every re-sealed value.
func TestRotationIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	c := pgCipher(t, store)
	require.NoError(t, c.Setup(ctx, pass))
	k := aegis.NewServerKey(store.Queries, c, aegis.KeySpec{Name: "hmac", Size: 32})
	secret, err := k.Secret(ctx)
	require.NoError(t, err)
	before, err := store.ServerKeyGet(ctx, "hmac")
	require.NoError(t, err)
	c.Register(aegis.Column{Names: []string{"broken.value_sealed"}, Reseal: func(context.Context, *db.Queries, *aegis.Resealer) error {
		return cairn.Errorf(cairn.ECodeInternal, "crash")
	}})

	require.ErrorContains(t, c.Rotate(ctx, pass, "another long passphrase"), "crash")
	after, err := store.ServerKeyGet(ctx, "hmac")
	require.NoError(t, err)
	require.Equal(t, before.KeySealed, after.KeySealed, "the re-sealed key was rolled back")
	fresh := pgCipher(t, store)
	require.NoError(t, fresh.Unlock(ctx, pass), "the old passphrase still unlocks")
	got, err := aegis.NewServerKey(store.Queries, fresh, aegis.KeySpec{Name: "hmac", Size: 32}).Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, secret, got)
}
