-- Device activity history. Rows are keyed by hostname (they outlive a
-- purge); scope follows the hostname's current device, else the row's own
-- site, so history moves with a device reassigned to another site.

-- name: DeviceActivityInsert :one
INSERT INTO device_activity (device_guid, hostname, site_id, kind, summary, actor, status, metadata, finished_at)
VALUES (sqlc.narg(device_guid), @hostname, sqlc.narg(site_id), @kind, @summary, @actor, @status, @metadata,
        sqlc.narg(finished_at))
RETURNING *;

-- name: DeviceActivityInsertForDevices :exec
-- One row per listed device, from its current record.
INSERT INTO device_activity (device_guid, hostname, site_id, kind, summary, actor, status, metadata, finished_at)
SELECT d.guid, d.hostname, d.site_id, @kind, @summary, @actor, 'completed', @metadata, now()
FROM devices d WHERE d.guid = ANY(@guids::text[]);

-- name: DeviceActivityList :many
SELECT a.* FROM device_activity a
WHERE lower(a.hostname) = lower(@hostname::text)
  AND (@all_sites::bool OR COALESCE(
        (SELECT d.site_id FROM devices d WHERE lower(d.hostname) = lower(a.hostname)), a.site_id) = ANY(@site_ids::bigint[]))
  AND (sqlc.narg(before_id)::bigint IS NULL OR a.id < sqlc.narg(before_id)::bigint)
ORDER BY a.id DESC
LIMIT @max_rows::int;

-- name: DeviceActivityDelete :execrows
DELETE FROM device_activity a
WHERE lower(a.hostname) = lower(@hostname::text)
  AND (@all_sites::bool OR COALESCE(
        (SELECT d.site_id FROM devices d WHERE lower(d.hostname) = lower(a.hostname)), a.site_id) = ANY(@site_ids::bigint[]));

-- name: DeviceActivityGet :one
SELECT a.* FROM device_activity a
WHERE a.id = @id
  AND (@all_sites::bool OR COALESCE(
        (SELECT d.site_id FROM devices d WHERE lower(d.hostname) = lower(a.hostname)), a.site_id) = ANY(@site_ids::bigint[]));
