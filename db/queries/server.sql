-- name: ServerKeyGet :one
SELECT * FROM server_keys WHERE name = @name;

-- name: ServerKeyInsertSealed :exec
-- A new key; replicas starting together race here and read back the winner.
INSERT INTO server_keys (name, key_sealed, public_key) VALUES (@name, @key_sealed, sqlc.narg(public_key))
ON CONFLICT (name) DO NOTHING;

-- name: ServerKeySeal :execrows
-- Seals a key still stored in plaintext (written before it was sealed).
UPDATE server_keys SET key_sealed = @key_sealed, public_key = sqlc.narg(public_key), key = NULL
WHERE name = @name AND key IS NOT NULL;

-- name: ServerKeyReplace :execrows
-- A new key for one a force-reset cipher sealed (unreadable now), only if
-- no other replica replaced it first.
UPDATE server_keys SET key_sealed = @key_sealed, public_key = sqlc.narg(public_key), created_at = now()
WHERE name = @name AND key_sealed = @old_sealed;

-- name: ServerKeySealedList :many
SELECT name, key_sealed FROM server_keys WHERE key_sealed IS NOT NULL ORDER BY name FOR UPDATE;

-- name: ServerKeySealedUpdate :exec
UPDATE server_keys SET key_sealed = @key_sealed WHERE name = @name;

-- name: RateLimitHit :one
-- Counts a hit in a fixed window and returns the count and the window start.
INSERT INTO rate_limits AS r (key, window_start, hits) VALUES (@key, now(), 1)
ON CONFLICT (key) DO UPDATE SET
    window_start = CASE WHEN r.window_start < now() - make_interval(secs => @window_seconds::float8) THEN now() ELSE r.window_start END,
    hits         = CASE WHEN r.window_start < now() - make_interval(secs => @window_seconds::float8) THEN 1 ELSE r.hits + 1 END
RETURNING hits, window_start;

-- name: RateLimitReset :exec
DELETE FROM rate_limits WHERE key = @key;

-- name: RateLimitDeleteExpired :exec
-- Also forgets sign-in failures a day old that block nothing any more.
WITH throttle AS (
    DELETE FROM auth_throttle WHERE last_failure_at < now() - interval '1 day' AND blocked_until < now()
)
DELETE FROM rate_limits WHERE window_start < now() - interval '1 day';

-- name: AuthThrottleLock :one
-- Locks the key's row (creating it empty) until the transaction ends, so
-- concurrent attempts on one key are admitted one at a time.
INSERT INTO auth_throttle AS t (key, failures, last_failure_at, blocked_until)
VALUES (@key, 0, @now, @now)
ON CONFLICT (key) DO UPDATE SET key = t.key
RETURNING *;

-- name: AuthThrottleSet :exec
UPDATE auth_throttle SET failures = @failures, last_failure_at = @now, blocked_until = @blocked_until
WHERE key = @key;

-- name: AuthThrottleGet :one
SELECT * FROM auth_throttle WHERE key = @key;

-- name: AuthThrottleDelete :exec
DELETE FROM auth_throttle WHERE key = ANY(@keys::text[]);

-- name: EventNotify :exec
SELECT pg_notify(@channel::text, @payload::text);

-- name: DatabasePing :one
SELECT 1::int AS ok;

-- name: ServerKeyInsertPlaintext :exec
-- A key as Engines before sealed server keys stored it; tests use it to
-- check that the first unlock seals such rows.
INSERT INTO server_keys (name, key) VALUES (@name, @key);

-- name: BackendPID :one
SELECT pg_backend_pid()::int;

-- name: BackendsBlockedBy :one
-- How many sessions wait on a lock the session with @pid holds. Tests use
-- it to order concurrent transactions deterministically (a writer is known
-- to be blocked before the holder commits). Run outside the holder's
-- transaction: statistics views are a snapshot within one.
SELECT count(*)::bigint FROM pg_catalog.pg_stat_activity WHERE @pid::int = ANY (pg_blocking_pids(pid));
