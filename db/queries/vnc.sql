-- Remote desktop (VNC) sessions.

-- name: VNCSessionInsert :one
INSERT INTO vnc_sessions (id, device_guid, site_id, hostname, operator, protocol, quality, reason)
VALUES (@id, @device_guid, @site_id, @hostname, @operator, @protocol, @quality, @reason)
RETURNING *;

-- name: VNCSessionGet :one
SELECT * FROM vnc_sessions
WHERE id = @id AND (@all_sites::bool OR site_id = ANY(@site_ids::bigint[]));

-- name: VNCSessionIssueToken :one
-- The establishment is ready: the browser's one-time token, once.
UPDATE vnc_sessions SET status = 'ready', ready_at = now(), token_hash = @token_hash,
    token_expires_at = now() + make_interval(secs => @ttl_seconds::float8)
WHERE id = @id AND status = 'establishing'
RETURNING *;

-- name: VNCSessionRedeem :one
-- The browser attaches: the token is spent whatever happens next.
UPDATE vnc_sessions SET status = 'live', attached_at = now(), token_hash = NULL
WHERE token_hash = @token_hash AND id = @id AND operator = @operator AND status = 'ready'
  AND token_expires_at > now()
RETURNING *;

-- name: VNCSessionFirstFrame :exec
UPDATE vnc_sessions SET first_frame_at = COALESCE(first_frame_at, @at::timestamptz) WHERE id = @id;

-- name: VNCSessionEnd :one
-- Ends a session once; ending an ended one returns no row.
UPDATE vnc_sessions SET status = 'ended', ended_at = now(), token_hash = NULL, end_reason = @end_reason,
    error_code = @error_code, error_message = @error_message
WHERE id = @id AND status <> 'ended'
RETURNING *;

-- name: VNCSessionListActive :many
SELECT * FROM vnc_sessions
WHERE status <> 'ended' AND (@all_sites::bool OR site_id = ANY(@site_ids::bigint[]))
ORDER BY created_at DESC
LIMIT @max_rows::int;

-- name: VNCSessionCountActiveByOperator :many
SELECT operator, count(*)::bigint AS sessions FROM vnc_sessions
WHERE status = 'live' AND (@all_sites::bool OR site_id = ANY(@site_ids::bigint[]))
GROUP BY operator ORDER BY operator;

-- name: VNCAuthRetryClaim :one
-- Claims the device's auth retry for session unless another holds it
-- (settled_until not passed); no row when refused.
INSERT INTO vnc_auth_retries (device_guid, session_id, settled_until)
VALUES (@device_guid, @session_id, now() + make_interval(secs => @settle_seconds::float8))
ON CONFLICT (device_guid) DO UPDATE SET session_id = EXCLUDED.session_id, started_at = now(),
    settled_until = EXCLUDED.settled_until
    WHERE vnc_auth_retries.settled_until <= now()
RETURNING *;

-- name: VNCAuthRetryHolder :one
-- The retry holding the device, with its session's status and how long
-- until it settles.
SELECT r.session_id, COALESCE(s.status, 'ended')::text AS status,
    GREATEST(0, EXTRACT(EPOCH FROM r.settled_until - now()))::float8 AS settles_in
FROM vnc_auth_retries r LEFT JOIN vnc_sessions s ON s.id = r.session_id
WHERE r.device_guid = @device_guid;

-- name: VNCAuthRetryRelease :exec
-- The retry's session ended: what is left is the settle time after it.
UPDATE vnc_auth_retries SET settled_until = LEAST(settled_until, now() + make_interval(secs => @settle_seconds::float8))
WHERE session_id = @session_id;

-- name: VNCSessionCountOthersActive :one
-- VNC sessions of the device other than id that still need its server
-- (an RDP session uses the host's RDP server, not the agent's x11vnc).
SELECT count(*)::bigint FROM vnc_sessions
WHERE device_guid = @device_guid AND id <> @id AND status <> 'ended' AND protocol = 'vnc';

-- name: VNCSessionHandoff :one
-- Another operator (or browser) takes a ready or live session over: the
-- owner changes, a new one-time token replaces any unspent one, and the
-- session waits for the taker's browser (ready).
UPDATE vnc_sessions SET handed_off_from = operator, operator = @operator, handed_off_at = now(),
    handoffs = handoffs + 1, status = 'ready', token_hash = @token_hash,
    token_expires_at = now() + make_interval(secs => @ttl_seconds::float8)
WHERE id = @id AND status IN ('ready', 'live')
RETURNING *;
