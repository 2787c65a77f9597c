-- Metadata fields (internal/metadata): definitions, per-device values and
-- the per-device revision agents sync operator edits by.

-- name: MetadataDefinitionList :many
SELECT field_number, description, updated_at, updated_by FROM metadata_field_definitions ORDER BY field_number;

-- name: MetadataDefinitionUpsert :one
INSERT INTO metadata_field_definitions (field_number, description, updated_at, updated_by)
VALUES (@field_number, @description, @updated_at, @updated_by)
ON CONFLICT (field_number) DO UPDATE
SET description = EXCLUDED.description, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
RETURNING field_number, description, updated_at, updated_by;

-- name: MetadataValueList :many
SELECT field_number, value_b64, modified_at, source FROM device_metadata_values
WHERE device_guid = @device_guid ORDER BY field_number;

-- name: MetadataValueGet :one
SELECT field_number, value_b64, modified_at, source FROM device_metadata_values
WHERE device_guid = @device_guid AND field_number = @field_number;

-- name: MetadataValueGetForUpdate :one
SELECT field_number, value_b64, modified_at, source FROM device_metadata_values
WHERE device_guid = @device_guid AND field_number = @field_number
FOR UPDATE;

-- name: MetadataValuePut :exec
INSERT INTO device_metadata_values (device_guid, field_number, value_b64, modified_at, source, revision)
VALUES (@device_guid, @field_number, @value_b64, @modified_at, @source, @revision)
ON CONFLICT (device_guid, field_number) DO UPDATE
SET value_b64 = EXCLUDED.value_b64, modified_at = EXCLUDED.modified_at, source = EXCLUDED.source,
    revision = EXCLUDED.revision;

-- name: MetadataDeviceLock :one
-- Serializes the metadata writes of one device (agent and operators): the
-- device row is locked, and a purged device is "not found".
SELECT guid FROM devices WHERE guid = @guid FOR NO KEY UPDATE;

-- name: MetadataRevisionBump :one
-- Revisions come from one sequence, so a device purged and enrolled again
-- under its GUID never repeats a revision its agent already holds.
INSERT INTO device_metadata_sync (device_guid, revision) VALUES (@device_guid, nextval('device_metadata_revision_seq'))
ON CONFLICT (device_guid) DO UPDATE SET revision = nextval('device_metadata_revision_seq')
RETURNING revision;

-- name: MetadataChangedSince :many
-- Fields an operator changed after the agent's revision; the device's
-- writes are serialized, so revisions commit in order and the highest one
-- seen here covers every change at or below it.
SELECT field_number, revision FROM device_metadata_values
WHERE device_guid = @device_guid AND revision > @revision
ORDER BY field_number;

-- name: MetadataSparseValues :many
-- Set values of a page of devices (GET /api/devices metadata_fields).
SELECT device_guid, field_number, value_b64 FROM device_metadata_values
WHERE device_guid = ANY (@guids::text[]) AND value_b64 <> ''
ORDER BY device_guid, field_number;

-- name: MetadataDeviceInScope :one
-- The device's GUID, hostname and site inside the caller's scope.
SELECT guid, hostname, site_id FROM devices
WHERE guid = @guid AND (@all_sites::boolean OR site_id = ANY (@site_ids::bigint[]));

-- name: AssemblyBundledIDs :many
SELECT bundled_key::text AS bundled_key, id FROM assemblies WHERE bundled_key IS NOT NULL;

-- name: AssemblyByBundledKey :one
SELECT id, bundled_sha256 FROM assemblies WHERE bundled_key = @bundled_key FOR UPDATE;

-- name: AssemblyNameTaken :one
SELECT EXISTS (SELECT 1 FROM assemblies WHERE lower(name) = lower(@name))::boolean;

-- name: AssemblyMarkBundled :exec
UPDATE assemblies SET bundled_key = @bundled_key, bundled_sha256 = @bundled_sha256 WHERE id = @id;

-- name: AssemblyIsBundled :one
SELECT (bundled_key IS NOT NULL)::boolean FROM assemblies WHERE id = @id;

-- name: BundledSeedLock :exec
-- Two serve replicas starting at once seed the bundle once.
SELECT pg_advisory_xact_lock(hashtext('cairn.bundled_assemblies'));
