package aegis_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// memStore keeps the cipher row in memory: these tests are about the
// cryptography; the PostgreSQL store is exercised by the API tests.
type memStore struct {
	mu sync.Mutex
	st *aegis.State
}

func (m *memStore) AegisState(context.Context) (*aegis.State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st == nil {
		return nil, nil
	}
	c := *m.st
	return &c, nil
}

func (m *memStore) AegisInsert(_ context.Context, s aegis.State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st = &s
	return nil
}

func (m *memStore) AegisRewrap(_ context.Context, keyID, salt []byte, kdf aegis.KDFParams, wrapped []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st == nil || !bytes.Equal(m.st.KeyID, keyID) {
		return false, nil
	}
	m.st.Salt, m.st.KDF, m.st.WrappedKey = salt, kdf, wrapped
	return true, nil
}

func (m *memStore) delete() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st = nil
}

var cheap = aegis.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}

func setup(t *testing.T) (*memStore, *aegis.Cipher) {
	t.Helper()
	store := &memStore{}
	c := aegis.New(store, cheap)
	require.NoError(t, c.Setup(context.Background(), "correct horse battery"))
	return store, c
}

func TestSealOpenRoundTripAndAAD(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	sealed, err := c.Seal([]byte("s3cret"), []byte("user-password:1"))
	require.NoError(t, err)
	require.NotContains(t, string(sealed), "s3cret")

	plain, err := c.Open(sealed, []byte("user-password:1"))
	require.NoError(t, err)
	require.Equal(t, "s3cret", string(plain))

	_, err = c.Open(sealed, []byte("user-password:2"))
	require.Error(t, err, "a sealed value must not open for another record")

	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	_, err = c.Open(tampered, []byte("user-password:1"))
	require.Error(t, err)
}

func TestRestartIsLockedUntilUnlock(t *testing.T) {
	t.Parallel()
	store, c := setup(t)
	sealed, err := c.Seal([]byte("totp"), nil)
	require.NoError(t, err)

	restarted := aegis.New(store, cheap)
	require.False(t, restarted.Unlocked())
	_, err = restarted.Open(sealed, nil)
	require.True(t, cairn.IsCode(err, cairn.ECodeAegisLocked))

	err = restarted.Unlock(context.Background(), "wrong passphrase!!")
	require.True(t, cairn.IsCode(err, cairn.ECodeInvalidPassphrase))
	require.False(t, restarted.Unlocked())

	require.NoError(t, restarted.Unlock(context.Background(), "correct horse battery"))
	plain, err := restarted.Open(sealed, nil)
	require.NoError(t, err)
	require.Equal(t, "totp", string(plain))
}

func TestRotateKeepsSecretsReadable(t *testing.T) {
	t.Parallel()
	store, c := setup(t)
	ctx := context.Background()
	sealed, err := c.Seal([]byte("credential"), nil)
	require.NoError(t, err)

	err = c.Rotate(ctx, "not the passphrase", "a brand new passphrase")
	require.True(t, cairn.IsCode(err, cairn.ECodeInvalidPassphrase))
	err = c.Rotate(ctx, "correct horse battery", "short")
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation))

	require.NoError(t, c.Rotate(ctx, "correct horse battery", "a brand new passphrase"))
	restarted := aegis.New(store, cheap)
	require.True(t, cairn.IsCode(restarted.Unlock(ctx, "correct horse battery"), cairn.ECodeInvalidPassphrase))
	require.NoError(t, restarted.Unlock(ctx, "a brand new passphrase"))
	plain, err := restarted.Open(sealed, nil)
	require.NoError(t, err)
	require.Equal(t, "credential", string(plain))
}

func TestResetMakesOldSecretsUnusable(t *testing.T) {
	t.Parallel()
	store, c := setup(t)
	ctx := context.Background()
	sealed, err := c.Seal([]byte("old"), nil)
	require.NoError(t, err)

	other := aegis.New(store, cheap) // a second replica holding the old key
	require.NoError(t, other.Unlock(ctx, "correct horse battery"))

	store.delete() // what a force reset does to the row
	c.Lock()
	require.NoError(t, c.Setup(ctx, "the replacement passphrase"))
	_, err = c.Open(sealed, nil)
	require.ErrorIs(t, err, aegis.ErrForeignKey)

	require.NoError(t, other.Reconcile(ctx))
	require.False(t, other.Unlocked(), "a replica holding a reset key must lock itself")
}

func TestSetupValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := aegis.New(&memStore{}, cheap)
	err := c.Setup(ctx, "short")
	var e *cairn.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, cairn.ECodeValidation, e.Code)
	require.Contains(t, e.Fields, "passphrase")

	require.NoError(t, c.Setup(ctx, "long enough passphrase"))
	require.True(t, cairn.IsCode(c.Setup(ctx, "long enough passphrase"), cairn.ECodeAegisConfigured))
}
