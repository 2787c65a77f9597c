package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// kill -9 of the Engine in the middle of a restore (every table already
// emptied inside its transaction) leaves the previous state; once the
// Engine is back and unlocked, the restore:<id> workflow retries the
// transaction and the restored state appears whole. At no moment does
// the database hold a mix.
func TestRestoreKilledMidwayLeavesOldOrNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tmp, err := filepath.Abs(t.TempDir())
	require.NoError(t, err)
	dataDir := filepath.Join(tmp, "data")
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	httpPort, httpsPort := freePort(t), freePort(t)
	env := []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", freePort(t))}
	eng := startServeAt(t, dataDir, httpPort, httpsPort, env...)
	token, _, _ := signInSecret(t, eng)
	store, err := db.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(store.Close)

	eng.post(t, "/api/sites", token, map[string]any{"name": "Kept", "site_worker_slug": "kept"})
	file := download(t, eng, "/api/server/backup/export", token)
	eng.post(t, "/api/sites", token, map[string]any{"name": "Dropped", "site_worker_slug": "dropped"})
	slugs := func() []string {
		list, err := store.Queries.SiteList(ctx, db.SiteListParams{AllSites: true})
		require.NoError(t, err)
		var out []string
		for _, s := range list {
			out = append(out, s.Slug)
		}
		slices.Sort(out)
		return out
	}
	old := slugs()
	require.Equal(t, []string{"dropped", "kept"}, old)

	// Hold the restore inside its transaction after it emptied every
	// table: its second TRUNCATE (the derived tables) waits for this lock.
	blocker, err := store.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = blocker.Exec(ctx, "LOCK TABLE device_filter_rows IN ACCESS SHARE MODE")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _, _ = uploadRaw(eng, "/api/server/backup/restore", token, map[string]string{"confirmation": "RESTORE ENGINE CONFIG BACKUP"}, file)
	}()
	require.Eventually(t, func() bool {
		var n int
		err := store.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'TRUNCATE "device_filter_rows"%'`).Scan(&n)
		return err == nil && n == 1
	}, 2*time.Minute, 100*time.Millisecond, "the restore never reached its second TRUNCATE; engine output:\n%s", eng.out)

	require.NoError(t, eng.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = eng.cmd.Process.Wait()
	wg.Wait()
	require.NoError(t, blocker.Rollback(ctx))
	require.Equal(t, old, slugs(), "after kill -9 the previous state, whole")

	// Back up, unlocked: the workflow applies the staged backup.
	eng = startServeAt(t, dataDir, httpPort, httpsPort, env...)
	require.Equal(t, old, slugs(), "nothing applied while the cipher is locked")
	require.Equal(t, "login_required", eng.post(t, "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "e2e test passphrase"})["phase"])
	require.Eventually(t, func() bool {
		got := slugs()
		require.Contains(t, [][]string{old, {"kept"}}, got, "old or new, never a mix")
		return slices.Equal(got, []string{"kept"})
	}, 3*time.Minute, 200*time.Millisecond, "the restore was not completed after the restart; engine output:\n%s", eng.out)
	var staged int
	require.NoError(t, store.Pool.QueryRow(ctx, "SELECT count(*) FROM backup_restores").Scan(&staged))
	require.Zero(t, staged, "the staged backup was consumed")
}
