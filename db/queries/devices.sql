-- name: DeviceInsert :one
INSERT INTO devices (guid, hostname, site_id) VALUES (@guid, @hostname, @site_id) RETURNING *;

-- name: DeviceSocketAttach :one
-- The agent's socket is now held by this replica (workers/agentsocket),
-- provided the device is still trusted under the token version the socket
-- authenticated with: a trust action between the upgrade and here leaves
-- no row, so its Drop cannot miss the socket. The agent's capabilities are
-- replaced by what this connect_agent reported (NULL: an agent before
-- protocol 4, which reports none).
UPDATE devices
SET socket_replica = @replica::text, socket_seen_at = now(), helper_contexts = @helper_contexts::text[],
    capabilities = sqlc.narg(capabilities)::text[]
WHERE guid = @guid::text AND trust_state = 'active' AND token_version = @token_version::int
RETURNING guid, hostname, site_id;

-- name: DeviceSocketCheckMany :many
-- What a replica re-checks of the sockets it holds, on each refresh and
-- after its listener reconnects: trust state and token version (a socket
-- outlives neither), which replica holds the device's newest socket, and
-- the expiry of the device's newest live refresh token (minted with its
-- newest access token: devicetrust.AccessValidUntil).
SELECT guid, trust_state, token_version, coalesce(socket_replica, '')::text AS socket_replica,
    coalesce((SELECT max(r.expires_at) FROM refresh_tokens r
              WHERE r.device_guid = devices.guid AND r.revoked_at IS NULL), 'epoch'::timestamptz)::timestamptz
        AS refresh_expires_at
FROM devices WHERE guid = ANY (@guids::text[]);

-- name: DeviceSocketDetach :execrows
-- Clears the socket only while this replica still holds it, so a reconnect
-- recorded by another replica in the meantime is not erased.
UPDATE devices
SET socket_replica = NULL, socket_seen_at = NULL
WHERE guid = @guid::text AND socket_replica = @replica::text;

-- name: DeviceSocketTouchMany :execrows
-- One statement per refresh for every socket a replica holds. Rows another
-- writer holds are skipped rather than waited for (a missed refresh is made
-- up 30 s later, well inside the 90 s freshness), and the rest are locked
-- in GUID order, so this never deadlocks with the heartbeat flush.
WITH locked AS (
    SELECT guid FROM devices
    WHERE socket_replica = @replica::text AND guid = ANY (@guids::text[])
    ORDER BY guid FOR UPDATE SKIP LOCKED
)
UPDATE devices
SET socket_seen_at = now()
WHERE guid IN (SELECT guid FROM locked);

-- name: DeviceSocketGet :one
-- Where the agent's socket is. socket_live compares against the database's
-- clock, the one that wrote socket_seen_at, so replica clock skew does not
-- matter.
SELECT guid, hostname, site_id, helper_contexts,
       coalesce(socket_replica, '')::text AS socket_replica,
       (socket_replica IS NOT NULL
        AND socket_seen_at > now() - make_interval(secs => @fresh_seconds::float8))::boolean AS socket_live
FROM devices WHERE guid = @guid::text;
