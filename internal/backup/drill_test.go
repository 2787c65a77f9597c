package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
)

// The drill restores the newest scheduled backup into a scratch database
// (never the Engine's own), finds the counts and keys in order, and drops
// the scratch database.
func TestDrillRestoresTheNewestBackupIntoAScratchDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	// An older file that is no backup: the drill must pick the newest.
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName(time.Now().Add(-48*time.Hour))), []byte("not a backup"), 0o600))
	name, _, err := f.src.svc.WriteScheduled(ctx, dir, time.Now())
	require.NoError(t, err)
	sessionsBefore, err := f.src.store.BackupCount(ctx, "sessions")
	require.NoError(t, err)

	rep, err := f.src.svc.Drill(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, name, rep.File)
	require.True(t, rep.Passed(), "%+v", rep)
	require.Positive(t, rep.Tables)
	require.Positive(t, rep.Rows)
	status, detail := DrillSummary(rep, nil)
	require.Equal(t, "succeeded", status)
	require.Contains(t, detail, "passed: "+name)

	left, err := f.src.store.ScratchLeftovers(ctx)
	require.NoError(t, err)
	require.Empty(t, left, "the scratch database is dropped")
	sessionsAfter, err := f.src.store.BackupCount(ctx, "sessions")
	require.NoError(t, err)
	require.Equal(t, sessionsBefore, sessionsAfter, "the Engine's own database is untouched (a restore would empty sessions)")

	_, err = f.src.svc.Drill(ctx, t.TempDir())
	require.ErrorContains(t, err, "no scheduled backup")
}

// A row that breaks a foreign key (loaded with triggers off) is found.
func TestForeignKeyViolationsAreFound(t *testing.T) {
	t.Parallel()
	e := newEngine(t, false)
	ctx := context.Background()
	none, err := e.store.BackupForeignKeyViolations(ctx)
	require.NoError(t, err)
	require.Empty(t, none)
	tx, err := e.store.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SET LOCAL session_replication_role = replica")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO devices (guid, hostname, site_id) VALUES ('orphan-guid', 'orphan', 424242)")
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	found, err := e.store.BackupForeignKeyViolations(ctx)
	require.NoError(t, err)
	require.Equal(t, []db.ForeignKeyViolation{{Table: "devices", Constraint: "devices_site_id_fkey", Rows: 1}}, found)
}

func TestDrillSummary(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rep    DrillReport
		err    error
		status string
		detail string
	}{
		{DrillReport{File: "f.json", Tables: 3, Rows: 9}, nil, "succeeded", "passed: f.json restored into a scratch database, 3 tables, 9 rows, counts and foreign keys hold"},
		{DrillReport{File: "f.json", Mismatches: []string{"sites: backup 2, restored 2, counted 1"}}, nil, "failed", "failed: f.json: sites: backup 2, restored 2, counted 1"},
		{DrillReport{File: "f.json", Violations: []db.ForeignKeyViolation{{Table: "devices", Constraint: "devices_site_id_fkey", Rows: 2}}}, nil, "failed",
			"failed: f.json: devices.devices_site_id_fkey: 2 rows break it"},
		{DrillReport{}, errors.New("permission denied to create database"), "failed", "the drill could not run: permission denied to create database"},
	}
	for _, c := range cases {
		status, detail := DrillSummary(c.rep, c.err)
		require.Equal(t, c.status, status)
		require.Equal(t, c.detail, detail)
	}
}
