-- name: APITokenInsert :one
INSERT INTO api_tokens (user_id, created_by, name, token_hash, access, scopes, expires_at)
VALUES (@user_id, sqlc.narg('created_by'), @name, @token_hash, @access, @scopes::text[], @expires_at)
RETURNING *;

-- name: APITokenGetByHash :one
-- Resolves a presented token with its owner's current role and state, so
-- a change of the owner applies from the next request.
SELECT t.id, t.user_id, t.access, t.scopes, t.expires_at, t.last_used_at,
       u.username, u.role, u.recovery_required, u.directory_disabled
FROM api_tokens t JOIN users u ON u.id = t.user_id
WHERE t.token_hash = @token_hash;

-- name: APITokenGetByID :one
-- Re-checks an open event stream's token (no touch).
SELECT t.id, t.user_id, t.access, t.scopes, t.expires_at, t.last_used_at,
       u.username, u.role, u.recovery_required, u.directory_disabled
FROM api_tokens t JOIN users u ON u.id = t.user_id
WHERE t.id = @id;

-- name: APITokenTouch :exec
-- At most one write a minute per token, whatever the request rate.
UPDATE api_tokens SET last_used_at = @used_at
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < @stale_before);

-- name: APITokenListByUser :many
SELECT t.id, t.name, t.access, t.scopes, t.created_at, t.expires_at, t.last_used_at,
       u.username, COALESCE(c.username, '')::text AS created_by
FROM api_tokens t
JOIN users u ON u.id = t.user_id
LEFT JOIN users c ON c.id = t.created_by
WHERE t.user_id = @user_id
ORDER BY t.id DESC;

-- name: APITokenCountByUser :one
SELECT count(*) FROM api_tokens WHERE user_id = @user_id;

-- name: APITokenDeleteByUser :execrows
-- A password or MFA reset revokes every token of the account.
DELETE FROM api_tokens WHERE user_id = @user_id;

-- name: APITokenDelete :execrows
DELETE FROM api_tokens WHERE id = @id AND user_id = @user_id;

-- name: APITokenDeleteExpired :execrows
-- Expired tokens stay listed (marked expired) for a week, then go.
DELETE FROM api_tokens WHERE expires_at < @before;
