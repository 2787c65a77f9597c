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
DELETE FROM rate_limits WHERE window_start < now() - interval '1 day';

-- name: EventNotify :exec
SELECT pg_notify(@channel::text, @payload::text);

-- name: DatabasePing :one
SELECT 1::int AS ok;

-- name: BackendPID :one
SELECT pg_backend_pid()::int;

-- name: BackendsBlockedBy :one
-- How many sessions wait on a lock the session with @pid holds. Tests use
-- it to order concurrent transactions deterministically (a writer is known
-- to be blocked before the holder commits). Run outside the holder's
-- transaction: statistics views are a snapshot within one.
SELECT count(*)::bigint FROM pg_catalog.pg_stat_activity WHERE @pid::int = ANY (pg_blocking_pids(pid));
