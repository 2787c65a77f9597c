-- name: ServerKeyEnsure :one
-- Inserts the key only when none exists, then returns whichever key won, so
-- replicas starting together agree on one.
WITH ins AS (
    INSERT INTO server_keys (name, key) VALUES (@name, @key)
    ON CONFLICT (name) DO NOTHING
    RETURNING key
)
SELECT key FROM ins
UNION ALL
SELECT key FROM server_keys WHERE name = @name
LIMIT 1;

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
