-- Device activity history. Rows are listed by hostname (they outlive a
-- purge) and scoped by each row's own site: a device that moves to another
-- site, or a new device reusing a hostname, does not bring the rows of a
-- site the reader cannot see. A row without a site is an administrator's.

-- name: DeviceActivityInsert :one
-- A row keyed by an operation is opened once: recording it again (a
-- retried activity whose first try committed) returns the row there is.
INSERT INTO device_activity (device_guid, hostname, site_id, kind, summary, actor, status, metadata, finished_at, operation_id)
VALUES (sqlc.narg(device_guid), @hostname,
        -- A row recorded without a site belongs to its device's site.
        COALESCE(sqlc.narg(site_id)::bigint, (SELECT d.site_id FROM devices d WHERE d.guid = sqlc.narg(device_guid)::text)), @kind, @summary, @actor, @status, @metadata,
        sqlc.narg(finished_at), sqlc.narg(operation_id))
ON CONFLICT (operation_id) WHERE operation_id IS NOT NULL DO UPDATE SET operation_id = EXCLUDED.operation_id
RETURNING *;

-- name: DeviceActivityInsertForDevices :exec
-- One row per listed device, from its current record.
INSERT INTO device_activity (device_guid, hostname, site_id, kind, summary, actor, status, metadata, finished_at)
SELECT d.guid, d.hostname, d.site_id, @kind, @summary, @actor, 'completed', @metadata, now()
FROM devices d WHERE d.guid = ANY(@guids::text[]);

-- name: DeviceActivityList :many
SELECT a.* FROM device_activity a
WHERE lower(a.hostname) = lower(@hostname::text)
  AND (@all_sites::bool OR a.site_id = ANY(@site_ids::bigint[]))
  AND (sqlc.narg(before_id)::bigint IS NULL OR a.id < sqlc.narg(before_id)::bigint)
ORDER BY a.id DESC
LIMIT @max_rows::int;

-- name: DeviceActivityDelete :execrows
DELETE FROM device_activity a
WHERE lower(a.hostname) = lower(@hostname::text)
  AND (@all_sites::bool OR a.site_id = ANY(@site_ids::bigint[]));

-- name: DeviceActivityGet :one
SELECT a.* FROM device_activity a
WHERE a.id = @id
  AND (@all_sites::bool OR a.site_id = ANY(@site_ids::bigint[]));

-- name: DeviceActivityGetByOperation :one
-- An operation's row (GET /api/operations/<operation_id>), inside the
-- reader's sites.
SELECT a.* FROM device_activity a
WHERE a.operation_id = @operation_id::text
  AND (@all_sites::bool OR a.site_id = ANY(@site_ids::bigint[]));
