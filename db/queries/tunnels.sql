-- The WireGuard tunnels (internal/tunnels): the Engine's key, the owner
-- lease, and one row per device.

-- name: WireguardServerGet :one
SELECT private_sealed, public_key FROM wireguard_server WHERE id = 1;

-- name: WireguardServerInsert :exec
-- The first replica to need a key makes it; a concurrent one keeps the
-- winner's (the caller reads the row back).
INSERT INTO wireguard_server (id, private_sealed, sealed_key_id, public_key)
VALUES (1, @private_sealed, @sealed_key_id, @public_key)
ON CONFLICT (id) DO NOTHING;

-- name: WireguardServerSealedList :many
SELECT id, private_sealed FROM wireguard_server;

-- name: WireguardServerSealedUpdate :exec
UPDATE wireguard_server SET private_sealed = @private_sealed, sealed_key_id = @sealed_key_id WHERE id = 1;

-- name: WireguardOwnerClaim :one
-- Takes or renews the lease: granted to its holder, or to anyone once it
-- lapsed. Returns the holder after the attempt.
INSERT INTO wireguard_owner (id, replica, expires_at)
VALUES (1, @replica, now() + make_interval(secs => @ttl_seconds::float8))
ON CONFLICT (id) DO UPDATE
SET replica = EXCLUDED.replica, expires_at = EXCLUDED.expires_at,
    acquired_at = CASE WHEN wireguard_owner.replica = EXCLUDED.replica THEN wireguard_owner.acquired_at ELSE now() END
WHERE wireguard_owner.replica = EXCLUDED.replica OR wireguard_owner.expires_at < now()
RETURNING replica;

-- name: WireguardOwnerGet :one
SELECT replica, expires_at, acquired_at, expires_at > now() AS live FROM wireguard_owner WHERE id = 1;

-- name: WireguardOwnerRelease :exec
DELETE FROM wireguard_owner WHERE id = 1 AND replica = @replica;

-- name: TunnelGet :one
SELECT sqlc.embed(t), d.site_id, d.hostname, d.trust_state FROM tunnels t JOIN devices d ON d.guid = t.device_guid
WHERE t.device_guid = @device_guid;

-- name: TunnelFreeOffset :one
-- The lowest free address offset from 2 (1 is the Engine's).
SELECT COALESCE((SELECT s FROM generate_series(2, @max_offset::integer) s
                 WHERE NOT EXISTS (SELECT 1 FROM tunnels WHERE ip_offset = s)
                 ORDER BY s LIMIT 1), 0)::integer AS free;

-- name: TunnelInsert :one
INSERT INTO tunnels (device_guid, tunnel_id, ip_offset, agent_public_key)
VALUES (@device_guid, @tunnel_id, @ip_offset, @agent_public_key)
ON CONFLICT (device_guid) DO NOTHING
RETURNING *;

-- name: TunnelEnsured :one
-- An ensure by the device's agent: its key may have changed; readiness
-- is reported again after the interface is (re)configured.
UPDATE tunnels SET agent_public_key = @agent_public_key, ensured_at = now()
WHERE device_guid = @device_guid
RETURNING *;

-- name: TunnelReady :one
UPDATE tunnels SET ready_at = CASE WHEN @ready::boolean THEN now() ELSE ready_at END,
                   last_handshake_at = COALESCE(sqlc.narg(last_handshake_at), last_handshake_at),
                   endpoint_used = @endpoint_used, last_error = @last_error
WHERE device_guid = @device_guid
RETURNING *;

-- name: TunnelHandshakes :exec
-- What the Engine's own WireGuard device saw, per peer key.
UPDATE tunnels t SET last_handshake_at = h.at
FROM (SELECT unnest(@public_keys::text[]) AS key, unnest(@ats::timestamptz[]) AS at) h
WHERE t.agent_public_key = h.key AND (t.last_handshake_at IS NULL OR t.last_handshake_at < h.at);

-- name: TunnelDelete :execrows
DELETE FROM tunnels WHERE device_guid = @device_guid;

-- name: TunnelListActive :many
-- Every tunnel whose device is trusted: the peers the Engine configures.
-- A quarantined or revoked device's tunnel is left out even before its
-- row is removed.
SELECT sqlc.embed(t), d.site_id, d.hostname FROM tunnels t JOIN devices d ON d.guid = t.device_guid
WHERE d.trust_state = 'active'
ORDER BY t.ip_offset;

-- name: TunnelListActiveBySites :many
SELECT sqlc.embed(t), d.site_id, d.hostname FROM tunnels t JOIN devices d ON d.guid = t.device_guid
WHERE d.trust_state = 'active' AND (sqlc.narg(site_ids)::bigint[] IS NULL OR d.site_id = ANY(sqlc.narg(site_ids)::bigint[]))
ORDER BY t.ip_offset;
