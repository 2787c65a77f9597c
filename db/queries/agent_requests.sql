-- Engine-to-agent requests waiting for a reply (internal/agentgateway).

-- name: AgentRequestInsert :exec
INSERT INTO agent_requests (id, device_guid, operation_id, type, payload, task_token, expires_at, grant_signed)
VALUES (@id, @device_guid, @operation_id, @type, @payload, @task_token, @expires_at, sqlc.narg(grant_signed));

-- name: AgentRequestMarkDelivered :one
-- The holder of the socket claims the request before writing it, once: the
-- notification and the holder's own sweep may both try.
UPDATE agent_requests SET replica = @replica::text
WHERE id = @id::text AND device_guid = @device_guid::text AND replica IS NULL
RETURNING *;

-- name: AgentRequestUnclaimed :many
-- Requests stored for these devices that no holder has claimed: their
-- notification was lost (the holder's listener was reconnecting) or has
-- not arrived yet.
SELECT id, device_guid FROM agent_requests
WHERE replica IS NULL AND device_guid = ANY (@guids::text[]) AND expires_at > now()
ORDER BY created_at;

-- name: AgentRequestTake :one
-- The first reply wins: the row is gone once taken, so a repeated reply
-- completes nothing twice.
DELETE FROM agent_requests WHERE id = @id::text AND device_guid = @device_guid::text
RETURNING task_token;

-- name: AgentRequestTakeByReplica :many
-- Requests a replica delivered to a socket that closed.
DELETE FROM agent_requests
WHERE device_guid = @device_guid::text AND replica = @replica::text
RETURNING id, task_token;

-- name: AgentRequestDeleteExpired :execrows
DELETE FROM agent_requests WHERE expires_at < now();

-- name: AgentEndpointUpsert :exec
INSERT INTO agent_endpoints (replica, url, sites, seen_at)
VALUES (@replica, @url, @sites::text[], now())
ON CONFLICT (replica) DO UPDATE SET url = EXCLUDED.url, sites = EXCLUDED.sites, seen_at = now();

-- name: AgentEndpointDelete :exec
DELETE FROM agent_endpoints WHERE replica = @replica;

-- name: AgentEndpointForSite :many
-- Live processes that take the site's agent sockets, the least loaded
-- (fewest live sockets) first.
SELECT e.replica, e.url,
       (SELECT count(*) FROM devices d
        WHERE d.socket_replica = e.replica
          AND d.socket_seen_at > now() - make_interval(secs => @fresh_seconds::float8))::bigint AS sockets
FROM agent_endpoints e
WHERE @slug::text = ANY (e.sites)
  AND e.seen_at > now() - make_interval(secs => @fresh_seconds::float8)
ORDER BY sockets, e.replica;

-- name: DeviceOperationTarget :one
-- What an operation needs to know about a device inside the operator's
-- scope: identity, site, trust, whether a socket is live and what its agent
-- can do (capabilities, NULL when never reported).
SELECT d.guid, d.hostname, d.site_id, s.slug AS site_slug, d.trust_state,
       (d.socket_replica IS NOT NULL
        AND d.socket_seen_at > now() - make_interval(secs => @fresh_seconds::float8))::boolean AS socket_live,
       i.collected_at AS inventory_collected_at,
       coalesce(i.part_hashes ? 'processes', false)::boolean AS has_processes,
       d.capabilities
FROM devices d
JOIN sites s ON s.id = d.site_id
LEFT JOIN device_inventory i ON i.device_guid = d.guid
WHERE lower(d.hostname) = lower(@hostname::text)
  AND (@all_sites::bool OR d.site_id = ANY (@site_ids::bigint[]));

-- name: DeviceOperationTargetByGUID :one
SELECT d.guid, d.hostname, d.site_id, s.slug AS site_slug, d.trust_state,
       (d.socket_replica IS NOT NULL
        AND d.socket_seen_at > now() - make_interval(secs => @fresh_seconds::float8))::boolean AS socket_live,
       d.capabilities
FROM devices d
JOIN sites s ON s.id = d.site_id
WHERE d.guid = @guid::text
  AND (@all_sites::bool OR d.site_id = ANY (@site_ids::bigint[]));

-- name: DeviceActivityFinish :one
UPDATE device_activity
SET status = @status, summary = @summary, metadata = @metadata, finished_at = now()
WHERE id = @id
RETURNING kind;

-- name: AgentEndpointList :many
SELECT * FROM agent_endpoints ORDER BY replica;
