-- name: InternalHMACKeyInsert :one
INSERT INTO internal_hmac_keys (key_id, secret_sealed, admission_id) VALUES (@key_id, @secret_sealed, sqlc.narg(admission_id))
RETURNING *;

-- name: InternalHMACKeyGet :one
SELECT * FROM internal_hmac_keys WHERE key_id = @key_id;

-- name: InternalHMACKeyList :many
SELECT * FROM internal_hmac_keys ORDER BY created_at, key_id;

-- name: InternalHMACKeyCountActive :one
-- Operator keys only: each cluster member's own key is apart.
SELECT count(*)::int FROM internal_hmac_keys WHERE retired_at IS NULL AND admission_id IS NULL;

-- name: InternalHMACKeyRetire :execrows
UPDATE internal_hmac_keys SET retired_at = @at WHERE key_id = @key_id AND retired_at IS NULL;

-- name: InternalHMACKeySealedUpdate :exec
UPDATE internal_hmac_keys SET secret_sealed = @secret_sealed WHERE key_id = @key_id;

-- name: InternalHMACSeenInsert :execrows
-- Records an accepted signature; 0 rows means it was seen before (replay).
INSERT INTO internal_hmac_seen (signature_hash, expires_at) VALUES (@signature_hash, @expires_at)
ON CONFLICT (signature_hash) DO NOTHING;

-- name: InternalHMACSeenDeleteExpired :execrows
DELETE FROM internal_hmac_seen WHERE expires_at < @now;
