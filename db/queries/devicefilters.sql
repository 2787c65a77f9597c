-- Saved device filters (internal/devicefilters). The filter trees
-- themselves are compiled to SQL by devicefilters/sql.go, the one
-- documented exception to "SQL lives in db/queries" (docs/architecture.md).

-- name: DeviceFilterInsert :one
INSERT INTO device_filters (name, description, tree, created_by, updated_by, owner_user_id, site_scope)
VALUES (@name, @description, @tree, @actor, @actor, sqlc.narg(owner_user_id), sqlc.narg(site_scope)::bigint[])
RETURNING *;

-- name: DeviceFilterUpdate :one
UPDATE device_filters SET name = @name, description = @description, tree = @tree, updated_by = @actor, updated_at = now(),
    site_scope = sqlc.narg(site_scope)::bigint[]
WHERE id = @id
RETURNING *;

-- name: DeviceFilterGetForUpdate :one
-- An edit locks the filter, so a job being pointed at it at the same
-- moment (its scheduled_job_filters row takes KEY SHARE) waits for the
-- edit or is seen by the edit's dependants check.
SELECT * FROM device_filters WHERE id = @id FOR UPDATE;

-- name: DeviceFilterDependantJobs :many
-- Scheduled jobs that target the filter, with the scope of who saved them.
SELECT j.id, j.name, j.target_scope FROM scheduled_jobs j
JOIN scheduled_job_filters f ON f.scheduled_job_id = j.id
WHERE f.filter_id = @filter_id ORDER BY j.id;

-- name: DeviceFilterGet :one
SELECT * FROM device_filters WHERE id = @id;

-- name: DeviceFilterGetMany :many
SELECT * FROM device_filters WHERE id = ANY(@ids::bigint[]) ORDER BY id;

-- name: DeviceFilterList :many
SELECT * FROM device_filters ORDER BY lower(name), id;

-- name: DeviceFilterSearch :many
-- Case-insensitive substring of the name; exact and prefix matches first.
SELECT * FROM device_filters
WHERE strpos(lower(name), lower(@query::text)) > 0
ORDER BY lower(name) = lower(@query::text) DESC, starts_with(lower(name), lower(@query::text)) DESC, lower(name), id
LIMIT @max_rows::int;

-- name: DeviceFilterInUse :one
-- Scheduled jobs keep their targets as {"filters": [id, ...]}.
SELECT EXISTS (SELECT 1 FROM scheduled_jobs j WHERE j.targets->'filters' @> jsonb_build_array(@id::bigint));

-- name: DeviceFilterDelete :exec
DELETE FROM device_filters WHERE id = @id;

-- name: DeviceAddressDelete :exec
DELETE FROM device_addresses WHERE device_guid = @device_guid;

-- name: DeviceAddressInsert :copyfrom
INSERT INTO device_addresses (device_guid, address) VALUES (@device_guid, @address);

-- name: DeviceFilterSuggestions :many
-- The most common values of an os or agent_version column inside scope,
-- for the filter builder.
SELECT v::text AS value FROM (
    SELECT CASE WHEN @column_name::text = 'os' THEN d.operating_system ELSE d.agent_version END AS v
    FROM devices d
    WHERE (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
) x
WHERE v <> ''
GROUP BY v
ORDER BY count(*) DESC, v
LIMIT 50;
