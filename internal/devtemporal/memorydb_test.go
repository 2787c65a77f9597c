package devtemporal

import (
	"context"
	"database/sql"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// An interrupted query makes database/sql discard the pool's only
// connection; the in-memory database must outlive that while it is held.
func TestMemoryDatabaseSurvivesADiscardedConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		held      bool
		wantTable bool
	}{
		{"held keeps the tables", true, true},
		{"unheld loses them (the failure the hold prevents)", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "test-" + uuid.NewString()
			if tc.held {
				memory, err := holdMemoryDatabase(name)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, memory.Close()) })
			}
			// The pool the way Temporal's SQLite plugin sets it up.
			pool, err := sql.Open("sqlite", memoryDSN(name))
			require.NoError(t, err)
			t.Cleanup(func() { _ = pool.Close() })
			pool.SetMaxOpenConns(1)
			pool.SetMaxIdleConns(1)
			pool.SetConnMaxIdleTime(0)
			_, err = pool.Exec("CREATE TABLE namespaces (id INTEGER)")
			require.NoError(t, err)

			// A query that never ends is interrupted by its context, and
			// the pool discards its connection. Should the deadline pass
			// before the query starts, nothing is interrupted: try again.
			discarded := false
			for attempt := 0; attempt < 100 && !discarded; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				_, err = pool.ExecContext(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c")
				cancel()
				require.Error(t, err)
				discarded = pool.Stats().OpenConnections == 0
			}
			require.True(t, discarded, "the pool never discarded its connection")

			var n int
			err = pool.QueryRow("SELECT count(*) FROM namespaces").Scan(&n)
			if tc.wantTable {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, "no such table")
			}
		})
	}
}

// The held connection is to the database the server itself uses.
func TestInMemoryServerHoldsItsOwnDatabase(t *testing.T) {
	t.Parallel()
	s, err := Start(Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	require.NotNil(t, s.memory)
	var n int
	require.NoError(t, s.memory.conn.QueryRowContext(context.Background(),
		"SELECT count(*) FROM namespaces").Scan(&n))
	require.Positive(t, n)
}
