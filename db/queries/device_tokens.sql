-- name: RefreshTokenInsert :exec
INSERT INTO refresh_tokens (token_hash, device_guid, family_id, expires_at)
VALUES (@token_hash, @device_guid, @family_id, @expires_at);

-- name: RefreshTokenGet :one
SELECT * FROM refresh_tokens WHERE token_hash = @token_hash;

-- name: RefreshTokenMarkUsed :execrows
-- Only one concurrent refresh with the same token wins.
UPDATE refresh_tokens SET used_at = @now
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
-- it stop working at once.
UPDATE devices
SET trust_state = @trust_state, token_version = token_version + 1, updated_at = @now
WHERE guid = @guid
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
