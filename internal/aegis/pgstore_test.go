package aegis_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// KDF costs read from PostgreSQL are bounded (issue 13 item 14): a row
// whose int4 columns hold a negative or huge cost is refused with a clear
// error before Argon2 would allocate it.
func TestStoredKDFParametersAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, kdf := range map[string]aegis.KDFParams{
		"negative memory": {Time: 1, MemoryKiB: 1 << 31, Threads: 1}, // stored as a negative int4
		"huge memory":     {Time: 1, MemoryKiB: 1<<31 - 1, Threads: 1},
		"huge time":       {Time: 1 << 20, MemoryKiB: 1024, Threads: 1},
	} {
		store := pgtest.NewDB(t)
		ps := aegis.PGStore{Q: store.Queries, S: store}
		require.NoError(t, ps.AegisInsert(ctx, aegis.State{Salt: make([]byte, 16), KDF: kdf, WrappedKey: make([]byte, 60), KeyID: make([]byte, 8)}), name)
		err := aegis.New(ps, cheap).Unlock(ctx, "correct horse battery")
		require.True(t, cairn.IsCode(err, cairn.ECodeUnavailable), "%s: %v", name, err)
		require.ErrorContains(t, err, "is outside", name)
	}
}
