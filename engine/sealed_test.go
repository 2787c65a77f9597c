package engine_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Every *_sealed column of the schema is re-sealed by a data-key rotation:
// a sealed column missing from engine.SealedColumns would be unreadable
// after the first rotation.
func TestEverySealedColumnIsResealed(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	inSchema, err := store.SealedColumnNames(context.Background())
	require.NoError(t, err)
	var registered []string
	for _, c := range engine.SealedColumns() {
		registered = append(registered, c.Names...)
	}
	slices.Sort(registered)
	require.Equal(t, inSchema, registered)
	require.Contains(t, registered, "server_keys.key_sealed")
}
