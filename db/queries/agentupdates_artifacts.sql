-- Agent artifacts (internal/agentartifacts) and install links
-- (internal/installlinks).

-- name: AgentArtifactUpsert :one
-- Records an artifact the catalog serves (or notes it again) and returns
-- its row with the signature, when one was stored.
INSERT INTO agent_artifacts (id, platform, build_id, sha256, size)
VALUES (@id, @platform, @build_id, @sha256, @size)
ON CONFLICT (id) DO UPDATE SET last_seen_at = now()
RETURNING *;

-- name: AgentArtifactSetSignature :exec
UPDATE agent_artifacts SET signature = @signature, signed_at = now() WHERE id = @id;

-- name: InstallLinkEnsure :one
-- Creates the site's link for the platform when it has none, then returns
-- whichever link exists, so replicas listing sites together agree on one.
WITH ins AS (
    INSERT INTO agent_install_links (site_id, platform, nonce, expires_at)
    VALUES (@site_id, @platform, @nonce, @expires_at)
    ON CONFLICT (site_id, platform) DO NOTHING
    RETURNING *
)
SELECT * FROM ins
UNION ALL
SELECT * FROM agent_install_links WHERE site_id = @site_id AND platform = @platform
LIMIT 1;

-- name: InstallLinksBySites :many
SELECT * FROM agent_install_links WHERE site_id = ANY(@site_ids::bigint[]);

-- name: InstallLinkGet :one
SELECT * FROM agent_install_links WHERE site_id = @site_id AND platform = @platform;

-- name: InstallLinkExtend :one
-- Moves a link's expiry forward when it is due (no row otherwise: another
-- replica extended it first, or it was revoked).
UPDATE agent_install_links SET expires_at = @expires_at
WHERE site_id = @site_id AND platform = @platform AND nonce = @nonce AND expires_at < @due_before
RETURNING *;

-- name: InstallLinkReplace :one
-- Revoke: a new nonce (the old URLs stop verifying) and a zeroed counter.
UPDATE agent_install_links
SET nonce = @nonce, expires_at = @expires_at, download_count = 0, created_by = @created_by, created_at = now()
WHERE site_id = @site_id AND platform = @platform
RETURNING *;

-- name: InstallLinkCountDownload :one
-- Counts one complete download through the link with this nonce (no row
-- when the link was revoked meanwhile).
UPDATE agent_install_links SET download_count = download_count + 1
WHERE site_id = @site_id AND platform = @platform AND nonce = @nonce
RETURNING download_count;

-- name: EnrollmentCodeHashesBySites :many
-- What install links bind to: every enrollment code of the sites, so a
-- rotation (new hash), a new code or a deleted one changes the digest.
SELECT site_id, id, code_hash FROM enrollment_codes
WHERE site_id = ANY(@site_ids::bigint[])
ORDER BY site_id, id;

-- name: DevicePlatformFacts :one
-- What the device reported about its system, to pick its artifact when
-- the agent does not name its platform.
SELECT d.operating_system,
       COALESCE(i.os->>'family', '')::text AS os_family,
       COALESCE(i.os->>'arch', '')::text AS os_arch
FROM devices d LEFT JOIN device_inventory i ON i.device_guid = d.guid
WHERE d.guid = @guid;
