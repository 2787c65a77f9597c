-- +goose Up

-- Honest retries (issue 22 item 4): an operation's activity row is keyed
-- by the operation it records, so the local activity that opens it can be
-- retried after its commit (a worker that died before reporting, a
-- timeout) and find the row it made instead of leaving a second one
-- stuck in running. Rows recorded without an operation (trust actions,
-- enrollment) keep a NULL key.
ALTER TABLE device_activity ADD COLUMN operation_id text;

-- Backfill from what the rows already carry: an operation's ID (device
-- operations and job-run dispatches) or a file transfer's. Where a retry
-- left duplicates, the first row keeps the key.
UPDATE device_activity a SET operation_id = k.key
FROM (
    SELECT DISTINCT ON (key) id, key FROM (
        SELECT id, COALESCE(metadata->>'operation_id', 'transfer:' || (metadata->>'transfer_id')) AS key
        FROM device_activity
        WHERE metadata ? 'operation_id' OR metadata ? 'transfer_id'
    ) s
    WHERE key IS NOT NULL
    ORDER BY key, id
) k
WHERE a.id = k.id;

CREATE UNIQUE INDEX device_activity_operation_idx ON device_activity (operation_id) WHERE operation_id IS NOT NULL;

-- +goose Down
DROP INDEX device_activity_operation_idx;
ALTER TABLE device_activity DROP COLUMN operation_id;
