package aegis_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
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

func (m *memStore) AegisRekey(ctx context.Context, keyID []byte, next aegis.State, reseal func(context.Context, *db.Queries) error) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.st == nil || !bytes.Equal(m.st.KeyID, keyID) {
		return false, nil
	}
	if err := reseal(ctx, nil); err != nil {
		return false, err
	}
	next.CreatedAt = m.st.CreatedAt
	m.st = &next
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

// memColumn is a sealed "column" held in memory, re-sealed by rotations.
type memColumn struct {
	values map[string][]byte // aad -> sealed
}

func (m *memColumn) column() aegis.Column {
	return aegis.Column{Names: []string{"mem.value_sealed"}, Reseal: func(_ context.Context, _ *db.Queries, r *aegis.Resealer) error {
		for aad, v := range m.values {
			out, _, err := r.Reseal(v, []byte(aad))
			if err != nil {
				return err
			}
			m.values[aad] = out
		}
		return nil
	}}
}

// Rotation replaces the data key itself (issue 13 item 14): registered
// values are re-sealed under the new key, and a copy sealed under the old
// key (as a thief of the old key would hold) no longer opens.
func TestRotateReplacesTheDataKey(t *testing.T) {
	t.Parallel()
	store, c := setup(t)
	ctx := context.Background()
	col := &memColumn{values: map[string][]byte{}}
	c.Register(col.column())
	for _, aad := range []string{"a", "b"} {
		v, err := c.Seal([]byte("secret "+aad), []byte(aad))
		require.NoError(t, err)
		col.values[aad] = v
	}
	oldCopy := bytes.Clone(col.values["a"])
	oldKeyID := c.KeyID()

	err := c.Rotate(ctx, "not the passphrase", "a brand new passphrase")
	require.True(t, cairn.IsCode(err, cairn.ECodeInvalidPassphrase))
	err = c.Rotate(ctx, "correct horse battery", "short")
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation))

	require.NoError(t, c.Rotate(ctx, "correct horse battery", "a brand new passphrase"))
	require.NotEqual(t, oldKeyID, c.KeyID(), "the data key changed")
	restarted := aegis.New(store, cheap)
	require.True(t, cairn.IsCode(restarted.Unlock(ctx, "correct horse battery"), cairn.ECodeInvalidPassphrase))
	require.NoError(t, restarted.Unlock(ctx, "a brand new passphrase"))
	for _, aad := range []string{"a", "b"} {
		plain, err := restarted.Open(col.values[aad], []byte(aad))
		require.NoError(t, err)
		require.Equal(t, "secret "+aad, string(plain))
	}
	_, err = restarted.Open(oldCopy, []byte("a"))
	require.ErrorIs(t, err, aegis.ErrForeignKey, "a value sealed by the old data key is not readable any more")

	// The same passphrase again rotates the data key alone.
	before := restarted.KeyID()
	require.NoError(t, restarted.Rotate(ctx, "a brand new passphrase", "a brand new passphrase"))
	require.NotEqual(t, before, restarted.KeyID())
}

// A value that fails authentication aborts the rotation, which then
// stores nothing: the old key and every value stay as they were.
func TestRotateAbortsWithoutChange(t *testing.T) {
	t.Parallel()
	store, c := setup(t)
	ctx := context.Background()
	col := &memColumn{values: map[string][]byte{}}
	c.Register(col.column())
	good, err := c.Seal([]byte("good"), []byte("good"))
	require.NoError(t, err)
	bad, err := c.Seal([]byte("bad"), []byte("bad"))
	require.NoError(t, err)
	bad[len(bad)-1] ^= 1
	col.values["good"], col.values["bad"] = good, bad
	before, err := store.AegisState(ctx)
	require.NoError(t, err)

	require.ErrorContains(t, c.Rotate(ctx, "correct horse battery", "a brand new passphrase"), "mem.value_sealed")
	after, err := store.AegisState(ctx)
	require.NoError(t, err)
	require.Equal(t, before.KeyID, after.KeyID)
	require.Equal(t, before.WrappedKey, after.WrappedKey)
	require.Equal(t, before.KeyID, c.KeyID())
	require.NoError(t, c.Unlock(ctx, "correct horse battery"))
}

// KDF parameters read from the database are bounded before Argon2 runs.
func TestUnlockRefusesAbsurdKDFParameters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, kdf := range map[string]aegis.KDFParams{
		"memory":      {Time: 1, MemoryKiB: 1 << 31, Threads: 1},
		"time":        {Time: 1 << 30, MemoryKiB: 1024, Threads: 1},
		"parallelism": {Time: 1, MemoryKiB: 1024, Threads: 255},
		"zero time":   {Time: 0, MemoryKiB: 1024, Threads: 1},
		"tiny memory": {Time: 1, MemoryKiB: 1, Threads: 1},
	} {
		store, c := setup(t)
		store.st.KDF = kdf
		c.Lock()
		err := c.Unlock(ctx, "correct horse battery")
		require.True(t, cairn.IsCode(err, cairn.ECodeUnavailable), "%s: %v", name, err)
		require.ErrorContains(t, err, "aegis_state row is damaged", name)
		require.False(t, c.Unlocked(), name)
		err = c.Rotate(ctx, "correct horse battery", "a brand new passphrase")
		require.True(t, cairn.IsCode(err, cairn.ECodeUnavailable), "%s: %v", name, err)
	}
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
