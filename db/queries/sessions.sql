-- name: SessionInsert :one
-- A new session is a sign-in: the account's last_login_at moves with it.
WITH touched AS (
    UPDATE users SET last_login_at = now() WHERE id = @user_id
)
INSERT INTO sessions (token_hash, csrf_hash, user_id, client_addr, user_agent, last_seen_at, expires_at)
VALUES (@token_hash, @csrf_hash, @user_id, @client_addr, @user_agent, @last_seen_at, @expires_at)
RETURNING *;

-- name: SessionGetByTokenHash :one
SELECT s.id, s.csrf_hash, s.user_id, s.last_seen_at, s.expires_at,
       u.username, u.role, u.auth_source, u.mfa_required, u.mfa_confirmed, u.recovery_required, u.created_at AS user_created_at
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.token_hash = @token_hash;

-- name: SessionGetByID :one
-- Re-checks an open event stream's session (no touch: a stream is not
-- operator activity).
SELECT s.id, s.csrf_hash, s.user_id, s.last_seen_at, s.expires_at,
       u.username, u.role, u.recovery_required
FROM sessions s JOIN users u ON u.id = s.user_id
WHERE s.id = @id;

-- name: SessionTouch :exec
-- Times are the Engine's clock, as expires_at and the idle check are.
UPDATE sessions SET last_seen_at = @seen_at WHERE id = @id;

-- name: SessionDelete :exec
DELETE FROM sessions WHERE id = @id;

-- name: SessionDeleteByUser :exec
DELETE FROM sessions WHERE user_id = @user_id;

-- name: SessionDeleteByUserExcept :exec
DELETE FROM sessions WHERE user_id = @user_id AND id <> @keep_id;

-- name: SessionDeleteAll :exec
DELETE FROM sessions;

-- name: SessionDeleteExpired :execrows
DELETE FROM sessions WHERE expires_at < @now OR last_seen_at < @idle_before;

-- name: PendingTokenUse :execrows
INSERT INTO pending_token_uses (jti, expires_at) VALUES (@jti, @expires_at)
ON CONFLICT (jti) DO NOTHING;

-- name: PendingTokenDeleteExpired :exec
DELETE FROM pending_token_uses WHERE expires_at < now();

-- name: SessionSetReauthenticated :execrows
-- The operator proved who they are again (auth.Service.MarkReauthenticated).
UPDATE sessions SET reauthenticated_at = @at WHERE id = @id;

-- name: SessionGetReauthenticatedAt :one
SELECT reauthenticated_at FROM sessions WHERE id = @id;
