-- name: BackupSchemaColumns :many
-- The running schema's tables and columns (issue 26): the backup's
-- declared table list is compared against it, and so is every file that
-- is analysed or restored. Generated columns cannot be written, so they
-- are marked and never exported.
SELECT c.table_name::text AS table_name, c.column_name::text AS column_name,
       c.data_type::text AS data_type, (c.is_generated = 'ALWAYS')::boolean AS generated,
       (c.is_nullable = 'YES' OR c.column_default IS NOT NULL OR c.is_identity = 'YES')::boolean AS optional,
       (COALESCE(c.column_default LIKE 'nextval(%', false) OR c.is_identity = 'YES')::boolean AS sequenced
FROM information_schema.columns c
JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
ORDER BY c.table_name, c.ordinal_position;

-- name: BackupRestoreStage :exec
INSERT INTO backup_restores (id, schema_version, payload, created_by)
VALUES (@id, @schema_version, @payload, @created_by);

-- name: BackupRestoreGet :one
SELECT * FROM backup_restores WHERE id = @id;

-- name: BackupRestoreTake :one
-- Consumed by the transaction that applies it: locked, then deleted with it.
DELETE FROM backup_restores WHERE id = @id RETURNING *;

-- name: BackupRestoreDeleteOlderThan :execrows
DELETE FROM backup_restores WHERE created_at < @before;

-- name: BackupForeignKeys :many
-- Which table references which: restore inserts parents before children.
SELECT DISTINCT tc.table_name::text AS child, ctu.table_name::text AS parent
FROM information_schema.table_constraints tc
JOIN information_schema.constraint_table_usage ctu
  ON ctu.constraint_schema = tc.constraint_schema AND ctu.constraint_name = tc.constraint_name
WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema()
  AND ctu.table_name <> tc.table_name
ORDER BY 1, 2;

-- name: BackupScheduleGet :one
-- The scheduled-backup settings (defaults when never saved).
SELECT enabled, directory, interval_hours, keep_daily, keep_weekly, keep_monthly, updated_by, updated_at
FROM (SELECT * FROM backup_schedule UNION ALL
      SELECT true, false, '', 24, 7, 4, 12, '', 'epoch'::timestamptz WHERE NOT EXISTS (SELECT 1 FROM backup_schedule)) s
LIMIT 1;

-- name: BackupScheduleSet :exec
INSERT INTO backup_schedule (id, enabled, directory, interval_hours, keep_daily, keep_weekly, keep_monthly, updated_by, updated_at)
VALUES (true, @enabled, @directory, @interval_hours, @keep_daily, @keep_weekly, @keep_monthly, @updated_by, now())
ON CONFLICT (id) DO UPDATE SET enabled = EXCLUDED.enabled, directory = EXCLUDED.directory,
    interval_hours = EXCLUDED.interval_hours, keep_daily = EXCLUDED.keep_daily, keep_weekly = EXCLUDED.keep_weekly,
    keep_monthly = EXCLUDED.keep_monthly, updated_by = EXCLUDED.updated_by, updated_at = now();

-- name: BackupRunBegin :exec
-- A run starts; a retried start of the same run is a no-op.
INSERT INTO backup_runs (id, kind) VALUES (@id, @kind) ON CONFLICT (id) DO NOTHING;

-- name: BackupRunFinish :exec
UPDATE backup_runs SET status = @status, file = @file, size_bytes = @size_bytes, pruned = @pruned::text[],
    detail = @detail, finished_at = now()
WHERE id = @id;

-- name: BackupRunList :many
SELECT * FROM backup_runs WHERE kind = @kind ORDER BY started_at DESC LIMIT @max_rows;

-- name: BackupRunLastSuccess :one
-- When the last run of kind succeeded (the epoch: never).
SELECT coalesce(max(started_at), 'epoch')::timestamptz AS started_at FROM backup_runs WHERE kind = @kind AND status = 'succeeded';

-- name: BackupRunLastStarted :one
-- When the last run of kind started, whatever its outcome (the epoch: never).
SELECT coalesce(max(started_at), 'epoch')::timestamptz AS started_at FROM backup_runs WHERE kind = @kind;
