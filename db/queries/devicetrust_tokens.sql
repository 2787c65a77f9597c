-- name: RefreshTokenInsert :exec
-- parent_hash is the token this one replaced (NULL for a new family).
INSERT INTO refresh_tokens (token_hash, device_guid, family_id, expires_at, parent_hash)
VALUES (@token_hash, @device_guid, @family_id, @expires_at, sqlc.narg(parent_hash));

-- name: RefreshTokenGet :one
SELECT * FROM refresh_tokens WHERE token_hash = @token_hash;

-- name: RefreshTokenGetForUpdate :one
-- Refresh locks the presented token, so a retry and the request it retries
-- are decided one after the other.
SELECT * FROM refresh_tokens WHERE token_hash = @token_hash FOR UPDATE;

-- name: RefreshTokenSuccessorUsed :one
-- Whether a token that replaced @token_hash was used: a retry of a used
-- token is a lost answer only while its successor is still unused.
SELECT EXISTS (SELECT 1 FROM refresh_tokens WHERE parent_hash = @token_hash AND used_at IS NOT NULL)::boolean;

-- name: RefreshTokenRetireSuccessors :exec
-- Retires the successor a lost refresh answer carried, before the retry
-- gets a new one.
UPDATE refresh_tokens SET revoked_at = @now
WHERE parent_hash = @token_hash AND used_at IS NULL AND revoked_at IS NULL;

-- name: RefreshTokenMarkUsed :execrows
-- Only one concurrent refresh with the same token wins.
UPDATE refresh_tokens SET used_at = @now, used_boot_id = @used_boot_id
WHERE token_hash = @token_hash AND used_at IS NULL AND revoked_at IS NULL;

-- name: RefreshTokenRevokeFamily :exec
UPDATE refresh_tokens SET revoked_at = @now WHERE family_id = @family_id AND revoked_at IS NULL;

-- name: RefreshTokenRevokeDevice :exec
UPDATE refresh_tokens SET revoked_at = @now WHERE device_guid = @device_guid AND revoked_at IS NULL;

-- name: RefreshTokenDeleteExpired :execrows
-- Used and revoked tokens are kept until they expire, so reuse is still
-- recognised as theft rather than as an unknown token.
DELETE FROM refresh_tokens WHERE expires_at < @now;

-- name: DeviceTrustSet :one
-- Every trust change bumps the token version: access tokens minted before
-- it stop working at once. Conditional on the state (and version) the
-- action read: no row when another action changed the device meanwhile,
-- so concurrent actions cannot chain (revoked -> quarantined -> active).
UPDATE devices
SET trust_state = @trust_state, token_version = token_version + 1, updated_at = @now
WHERE guid = @guid AND trust_state = @from_state AND token_version = @from_version
RETURNING *;

-- name: DevicePurgeInsert :exec
INSERT INTO device_purges (guid, jkt, hostname, token_version, purged_by)
VALUES (@guid, @jkt, @hostname, @token_version, @purged_by)
ON CONFLICT (guid) DO UPDATE SET jkt = EXCLUDED.jkt, hostname = EXCLUDED.hostname,
    token_version = EXCLUDED.token_version, purged_by = EXCLUDED.purged_by, purged_at = now();

-- name: DeviceDelete :execrows
DELETE FROM devices WHERE guid = @guid;

-- name: RefreshTokenRevokedCount :one
-- Revoked refresh tokens of a device (the fault suite checks that a
-- restart or reconnect storm revokes no family).
SELECT count(*) FROM refresh_tokens WHERE device_guid = @device_guid AND revoked_at IS NOT NULL;

-- name: DevicePurgeIfUnchanged :execrows
-- Purge deletes the device only in the state (and version) it read, which
-- its barrier records.
DELETE FROM devices WHERE guid = @guid AND trust_state = @from_state AND token_version = @from_version;
