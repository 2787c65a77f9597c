-- Writes of the agent callbacks (heartbeat, status, details).

-- name: DeviceHeartbeatApply :many
-- One statement per flush: the coalesced heartbeats as parallel arrays
-- (unnest in a select list zips them row by row).
-- last_seen only moves forward (a status post may have set a later one).
-- details_wanted: the device has no inventory row yet; metadata_revision:
-- the device's operator-edit revision (agents fetch edits past theirs).
-- The rows are locked in GUID order first (an UPDATE ... FROM locks them
-- in whatever order its join runs), so two writers of many devices never
-- deadlock.
WITH locked AS (
    SELECT guid FROM devices WHERE guid = ANY (@guids::text[]) ORDER BY guid FOR UPDATE
)
UPDATE devices d SET
    last_seen     = GREATEST(d.last_seen, u.seen_at),
    metrics       = u.metrics::jsonb,
    agent_version = CASE WHEN u.agent_version <> '' THEN u.agent_version ELSE d.agent_version END,
    boot_id       = CASE WHEN u.boot_id <> '' THEN u.boot_id ELSE d.boot_id END,
    updated_at    = now()
FROM (SELECT unnest(@guids::text[]) AS guid, unnest(@seen_at::timestamptz[]) AS seen_at,
             unnest(@metrics::text[]) AS metrics, unnest(@agent_versions::text[]) AS agent_version,
             unnest(@boot_ids::text[]) AS boot_id) u
WHERE d.guid = u.guid AND d.guid IN (SELECT guid FROM locked)
RETURNING d.guid, NOT EXISTS (SELECT 1 FROM device_inventory i WHERE i.device_guid = d.guid) AS details_wanted,
    COALESCE((SELECT m.revision FROM device_metadata_sync m WHERE m.device_guid = d.guid), 0)::bigint AS metadata_revision;

-- name: DeviceStatusApply :one
UPDATE devices SET
    last_seen     = GREATEST(last_seen, @seen_at::timestamptz),
    last_status   = @last_status::jsonb,
    agent_version = CASE WHEN @agent_version::text <> '' THEN @agent_version::text ELSE agent_version END,
    agent_build_id = CASE WHEN @agent_build_id::text <> '' THEN @agent_build_id::text ELSE agent_build_id END,
    boot_id       = CASE WHEN @boot_id::text <> '' THEN @boot_id::text ELSE boot_id END,
    updated_at    = now()
WHERE guid = @guid
RETURNING guid, hostname, site_id;

-- name: DeviceRoleUpsert :batchexec
-- A role that reports no last-healthy time keeps the one it had.
INSERT INTO device_roles (device_guid, key, desired, observed, last_checked_at, last_healthy_at,
                          last_error, recovery_attempts, context, updated_at)
VALUES (@device_guid, @key, @desired, @observed, sqlc.narg(last_checked_at), sqlc.narg(last_healthy_at),
        @last_error, @recovery_attempts, @context, now())
ON CONFLICT (device_guid, key) DO UPDATE SET
    desired           = EXCLUDED.desired,
    observed          = EXCLUDED.observed,
    last_checked_at   = EXCLUDED.last_checked_at,
    last_healthy_at   = COALESCE(EXCLUDED.last_healthy_at, device_roles.last_healthy_at),
    last_error        = EXCLUDED.last_error,
    recovery_attempts = EXCLUDED.recovery_attempts,
    context           = EXCLUDED.context,
    updated_at        = now();

-- name: DeviceLockForInventory :one
-- Serializes details posts of one device (and gives the event its names).
SELECT guid, hostname, site_id FROM devices WHERE guid = @guid FOR UPDATE;

-- name: DeviceInventoryHashes :one
SELECT part_hashes FROM device_inventory WHERE device_guid = @device_guid;

-- name: DeviceInventoryUpsert :exec
-- A NULL collection leaves the stored one; part_hashes arrives merged.
INSERT INTO device_inventory (device_guid, hash, hardware, os, network, sessions, uptime, software,
                              services, processes, services_hash, part_hashes, collected_at, updated_at)
VALUES (@device_guid, @hash, sqlc.narg(hardware)::jsonb, sqlc.narg(os)::jsonb, sqlc.narg(network)::jsonb,
        sqlc.narg(sessions)::jsonb, sqlc.narg(uptime)::jsonb, sqlc.narg(software)::jsonb,
        sqlc.narg(services)::jsonb, sqlc.narg(processes)::jsonb, @services_hash, @part_hashes::jsonb,
        sqlc.narg(collected_at), now())
ON CONFLICT (device_guid) DO UPDATE SET
    hash          = EXCLUDED.hash,
    hardware      = COALESCE(EXCLUDED.hardware, device_inventory.hardware),
    os            = COALESCE(EXCLUDED.os, device_inventory.os),
    network       = COALESCE(EXCLUDED.network, device_inventory.network),
    sessions      = COALESCE(EXCLUDED.sessions, device_inventory.sessions),
    uptime        = COALESCE(EXCLUDED.uptime, device_inventory.uptime),
    software      = COALESCE(EXCLUDED.software, device_inventory.software),
    services      = COALESCE(EXCLUDED.services, device_inventory.services),
    processes     = COALESCE(EXCLUDED.processes, device_inventory.processes),
    services_hash = CASE WHEN EXCLUDED.services_hash <> '' THEN EXCLUDED.services_hash ELSE device_inventory.services_hash END,
    part_hashes   = EXCLUDED.part_hashes,
    collected_at  = EXCLUDED.collected_at,
    updated_at    = now();

-- name: DeviceOperatingSystemSet :exec
UPDATE devices SET operating_system = @operating_system, updated_at = now() WHERE guid = @guid;

-- name: DeviceSoftwareDelete :exec
DELETE FROM device_software WHERE device_guid = @device_guid;

-- name: DeviceSoftwareInsert :copyfrom
INSERT INTO device_software (device_guid, site_id, name_key, name, version, publisher)
VALUES (@device_guid, @site_id, @name_key, @name, @version, @publisher);

-- name: DevicePatchDelete :exec
DELETE FROM device_patches WHERE device_guid = @device_guid;

-- name: DevicePatchInsert :copyfrom
INSERT INTO device_patches (device_guid, patch_key, kb, title, update_id, revision, state, source, package,
                            installed_version, candidate_version, severity, installed_at, security, origin, kbs,
                            categories, reboot_behavior, size_bytes, released_at)
VALUES (@device_guid, @patch_key, @kb, @title, @update_id, @revision, @state, @source, @package,
        @installed_version, @candidate_version, @severity, @installed_at, @security, @origin, @kbs,
        @categories, @reboot_behavior, @size_bytes, @released_at);
