-- Remote shell sessions and scoped operation tokens (internal/shells).
-- Scope follows the session's own device (by GUID: it may have moved
-- site), else, once that device was purged, the row's own site: never
-- whichever device holds the hostname now (issue 21 item 10). Listings
-- never read the transcript.

-- name: ShellSessionInsert :one
INSERT INTO shell_sessions (id, device_guid, hostname, site_id, operator, token_hash,
                            cols, rows, idle_timeout_seconds, expires_at)
VALUES (@id, @device_guid, @hostname, @site_id, @operator, @token_hash,
        @cols, @rows, @idle_timeout_seconds, now() + make_interval(secs => @ttl_seconds::float8))
RETURNING id, expires_at;

-- name: ShellSessionClaimBrowser :one
-- The browser's token is single use: only a pending, unexpired session of
-- this operator moves to connecting, once; the agent's token is made then.
UPDATE shell_sessions
SET state = 'connecting', replica = @replica, connected_at = now(), agent_token_hash = @agent_token_hash
WHERE id = @id AND token_hash = @token_hash AND operator = @operator
  AND state = 'pending' AND expires_at > now()
RETURNING id, device_guid, hostname, site_id, operator, state, cols, rows, idle_timeout_seconds, replica,
          created_at, connected_at, started_at, ended_at, exit_code, close_reason, activity_id, transcript_truncated;

-- name: ShellSessionClaimAgent :one
-- The agent's token is single use and only for the session's own device,
-- while the browser waits for it.
UPDATE shell_sessions
SET state = 'open', started_at = now()
WHERE id = @id AND agent_token_hash = @agent_token_hash AND device_guid = @device_guid
  AND state = 'connecting'
RETURNING id, device_guid, hostname, site_id, operator, state, cols, rows, idle_timeout_seconds, replica,
          created_at, connected_at, started_at, ended_at, exit_code, close_reason, activity_id, transcript_truncated;

-- name: ShellSessionSetActivity :exec
UPDATE shell_sessions SET activity_id = @activity_id WHERE id = @id;

-- name: ShellSessionFinish :one
-- Closes a session once; a second finish (both sides racing) changes nothing.
UPDATE shell_sessions
SET state = 'closed', ended_at = now(), exit_code = sqlc.narg(exit_code), close_reason = @close_reason
WHERE id = @id AND state <> 'closed'
RETURNING id, device_guid, hostname, site_id, operator, state, cols, rows, idle_timeout_seconds, replica,
          created_at, connected_at, started_at, ended_at, exit_code, close_reason, activity_id, transcript_truncated;

-- name: ShellSessionGet :one
SELECT s.id, s.device_guid, s.hostname, s.site_id, s.operator, s.state, s.cols, s.rows, s.idle_timeout_seconds,
       s.replica, s.created_at, s.connected_at, s.started_at, s.ended_at, s.exit_code, s.close_reason,
       s.activity_id, s.transcript_truncated, s.expires_at, s.transcript_bytes
FROM shell_sessions s
WHERE s.id = @id
  AND (@all_sites::bool OR COALESCE(
        (SELECT d.site_id FROM devices d WHERE d.guid = s.device_guid), s.site_id) = ANY(@site_ids::bigint[]));

-- name: ShellSessionList :many
SELECT s.id, s.device_guid, s.hostname, s.site_id, s.operator, s.state, s.cols, s.rows, s.idle_timeout_seconds,
       s.replica, s.created_at, s.connected_at, s.started_at, s.ended_at, s.exit_code, s.close_reason,
       s.activity_id, s.transcript_truncated, s.expires_at, s.transcript_bytes
FROM shell_sessions s
WHERE (sqlc.narg(hostname)::text IS NULL OR lower(s.hostname) = lower(sqlc.narg(hostname)::text))
  AND (@all_sites::bool OR COALESCE(
        (SELECT d.site_id FROM devices d WHERE d.guid = s.device_guid), s.site_id) = ANY(@site_ids::bigint[]))
ORDER BY s.created_at DESC, s.id
LIMIT @max_rows::int;

-- name: ShellSessionTranscript :one
SELECT s.transcript_bytes, s.state
FROM shell_sessions s
WHERE s.id = @id
  AND (@all_sites::bool OR COALESCE(
        (SELECT d.site_id FROM devices d WHERE d.guid = s.device_guid), s.site_id) = ANY(@site_ids::bigint[]));

-- name: RemoteOpTokenInsert :one
INSERT INTO remote_op_tokens (token_hash, capability, device_guid, operator, expires_at)
VALUES (@token_hash, @capability, @device_guid, @operator, now() + make_interval(secs => @ttl_seconds::float8))
RETURNING expires_at;

-- name: RemoteOpTokenRedeem :one
-- Single use: the first redemption inside the lifetime wins.
UPDATE remote_op_tokens
SET used_at = now()
WHERE token_hash = @token_hash AND capability = @capability AND operator = @operator
  AND used_at IS NULL AND expires_at > now()
RETURNING device_guid;

-- name: RemoteOpTokenSweep :exec
DELETE FROM remote_op_tokens WHERE expires_at < now() - interval '1 hour';

-- name: ShellSessionTouchMany :execrows
-- The bridging process confirms its live sessions in one statement.
UPDATE shell_sessions SET seen_at = now()
WHERE id = ANY (@ids::text[]) AND state IN ('connecting', 'open');

-- name: ShellSessionListLost :many
-- Sessions whose bridging process stopped confirming them.
SELECT id FROM shell_sessions
WHERE state IN ('connecting', 'open')
  AND coalesce(seen_at, connected_at, created_at) < now() - make_interval(secs => @lost_after_seconds::float8)
ORDER BY id
LIMIT 500;

-- name: ShellDeviceCheck :many
-- What a bridged shell re-checks of its device on each guard tick and on
-- each event about it (issue 21 item 6): trust state, token version and
-- site, and the expiry of its newest live refresh token
-- (devicetrust.AccessValidUntil). No row: the device was purged.
SELECT trust_state, token_version, site_id,
    coalesce((SELECT max(r.expires_at) FROM refresh_tokens r
              WHERE r.device_guid = devices.guid AND r.revoked_at IS NULL), 'epoch'::timestamptz)::timestamptz
        AS refresh_expires_at
FROM devices WHERE guid = @guid::text;

-- name: ShellTranscriptAppend :execrows
-- Appends one chunk of a session's transcript and counts its bytes. A
-- chunk written already (a retried write) changes nothing.
WITH chunk AS (
    INSERT INTO shell_transcript_chunks (session_id, seq, data)
    VALUES (@session_id, @seq, @data)
    ON CONFLICT (session_id, seq) DO NOTHING
    RETURNING length(data) AS n
)
UPDATE shell_sessions SET transcript_bytes = transcript_bytes + chunk.n
FROM chunk
WHERE id = @session_id;

-- name: ShellTranscriptChunks :many
-- A page of a transcript's chunks in order, from seq on.
SELECT seq, data FROM shell_transcript_chunks
WHERE session_id = @session_id AND seq >= @from_seq::int
ORDER BY seq
LIMIT @max_rows::int;
