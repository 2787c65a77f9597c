package agentartifacts_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A replica whose cipher is locked serves a manifest only once an unlocked
// one has signed it; before that it answers aegis_locked, never an
// unsigned manifest.
func TestSignedCurrentNeedsOneUnlockedReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "linux-amd64", agentartifacts.BinaryName("linux-amd64"))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("not really an agent"), 0o755))
	require.NoError(t, os.WriteFile(path+agentartifacts.BuildIDSuffix, []byte("build-1\n"), 0o644))

	unlocked := aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF)
	require.NoError(t, unlocked.Setup(ctx, "correct horse battery staple"))
	locked := aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF)
	require.False(t, locked.Unlocked())

	onLocked := agentartifacts.New(dir, agentartifacts.Options{Store: store, Signer: scriptsign.New(store, locked)})
	_, err := onLocked.SignedCurrent(ctx, "linux-amd64")
	require.Equal(t, cairn.ECodeAegisLocked, cairn.ErrorCode(err), "%v", err)

	onUnlocked := agentartifacts.New(dir, agentartifacts.Options{Store: store, Signer: scriptsign.New(store, unlocked)})
	signed, err := onUnlocked.SignedCurrent(ctx, "linux-amd64")
	require.NoError(t, err)
	require.NotEmpty(t, signed.Signature.Signature)

	served, err := onLocked.SignedCurrent(ctx, "linux-amd64")
	require.NoError(t, err)
	require.Equal(t, signed.Signature, served.Signature)
	require.Equal(t, "build-1", served.BuildID)
}
