-- Operator reads and edits of devices. Every query takes the caller's site
-- scope (@all_sites, @site_ids): a device outside it is filtered out here,
-- so it answers exactly like one that does not exist.

-- name: DeviceListInScope :many
-- site_id narrows to one site; online_since keeps devices heard from since.
SELECT sqlc.embed(d), s.name AS site_name, s.slug AS site_slug
FROM devices d JOIN sites s ON s.id = d.site_id
WHERE (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
  AND (sqlc.narg(site_id)::bigint IS NULL OR d.site_id = sqlc.narg(site_id)::bigint)
  AND (sqlc.narg(online_since)::timestamptz IS NULL OR d.last_seen >= sqlc.narg(online_since)::timestamptz)
ORDER BY lower(d.hostname);

-- name: DeviceSearchInScope :many
-- Case-insensitive substring; exact and prefix matches first.
SELECT sqlc.embed(d), s.name AS site_name, s.slug AS site_slug
FROM devices d JOIN sites s ON s.id = d.site_id
WHERE (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
  AND strpos(lower(d.hostname), lower(@query::text)) > 0
ORDER BY lower(d.hostname) = lower(@query::text) DESC, starts_with(lower(d.hostname), lower(@query::text)) DESC,
         lower(d.hostname)
LIMIT @max_rows::int;

-- name: DeviceGetInScope :one
SELECT sqlc.embed(d), s.name AS site_name, s.slug AS site_slug
FROM devices d JOIN sites s ON s.id = d.site_id
WHERE d.guid = @guid AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]));

-- name: DeviceGetByHostnameInScope :one
SELECT sqlc.embed(d), s.name AS site_name, s.slug AS site_slug
FROM devices d JOIN sites s ON s.id = d.site_id
WHERE lower(d.hostname) = lower(@hostname::text) AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]));

-- name: DeviceInventoryGet :one
SELECT * FROM device_inventory WHERE device_guid = @device_guid;

-- name: DevicePatchList :many
SELECT * FROM device_patches WHERE device_guid = @device_guid ORDER BY state, patch_key;

-- name: DeviceRoleList :many
SELECT * FROM device_roles WHERE device_guid = @device_guid ORDER BY key;

-- name: DeviceDescriptionSet :one
UPDATE devices d SET description = @description, updated_at = now()
WHERE lower(d.hostname) = lower(@hostname::text) AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
RETURNING d.guid;

-- name: DeviceSiteAssign :many
-- Returns each device's site before the move: a device that changed site
-- ends its live shells and transfers (issue 21 item 6).
WITH before AS (
    SELECT guid, site_id FROM devices WHERE guid = ANY(@guids::text[]) FOR UPDATE
)
UPDATE devices d SET site_id = @site_id, updated_at = now()
FROM before b
WHERE d.guid = b.guid
RETURNING d.guid, d.hostname, b.site_id AS previous_site_id;

-- name: DeviceFixtureUpdate :exec
-- Tests only: what enrollment, heartbeats and the socket runtime set.
UPDATE devices SET
    agent_id         = @agent_id,
    operating_system = @operating_system,
    agent_version    = @agent_version,
    last_seen        = sqlc.narg(last_seen),
    socket_replica   = sqlc.narg(socket_replica),
    socket_seen_at   = sqlc.narg(socket_seen_at),
    helper_contexts  = @helper_contexts::text[]
WHERE guid = @guid;

-- name: DeviceSoftwareList :many
SELECT * FROM device_software WHERE device_guid = @device_guid ORDER BY name_key, version;
