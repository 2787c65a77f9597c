package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// A saturated pool sheds requests with 503 service_unavailable and
// Retry-After once the acquire timeout passes, instead of queueing them
// without bound; the same request succeeds once connections come free.
func TestSaturatedPoolShedsWithServiceUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := db.OpenWith(ctx, pgtest.URL(pgtest.NewDatabase(t)), db.PoolConfig{MaxConns: 3, AcquireTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	f := &fixture{store: store, clk: authtest.NewClock(), github: newFakeGitHub(t)}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	f.bootstrap(t)

	// Hold every connection the pool may open (the event bus's LISTEN
	// connection left the pool when it was hijacked).
	var held []*pgxpool.Conn
	for range 3 {
		c, err := store.Pool.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, c)
	}
	r := f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": "admin", "password": "wrong password"})
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "service_unavailable", r.Body["error"])
	require.Equal(t, "2", r.Header.Get("Retry-After"))

	for _, c := range held {
		c.Release()
	}
	r = f.do(t, "POST", "/api/auth/login", "", map[string]any{"username": "admin", "password": "wrong password"})
	require.Equal(t, 401, r.Status, r.Raw)
}

// The statement timeout ends a runaway statement in PostgreSQL.
func TestStatementTimeoutEndsLongStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := db.OpenWith(ctx, pgtest.URL(pgtest.NewDatabase(t)), db.PoolConfig{StatementTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(store.Close)
	var timeout string
	// Harness-only SQL: read the session setting the pool gave the connection.
	require.NoError(t, store.Pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&timeout))
	require.Equal(t, "1s", timeout)
}
