-- name: EnrollmentCodeInsert :one
INSERT INTO enrollment_codes (site_id, code_hash, code_sealed, expires_at, max_uses, created_by)
VALUES (@site_id, @code_hash, @code_sealed, @expires_at, @max_uses, @created_by)
RETURNING *;

-- name: EnrollmentCodeSetSealed :exec
-- Seals are bound to the row's ID, which exists only after the insert.
UPDATE enrollment_codes SET code_sealed = @code_sealed WHERE id = @id;

-- name: EnrollmentCodeList :many
SELECT c.*, s.name AS site_name
FROM enrollment_codes c JOIN sites s ON s.id = c.site_id
WHERE (@all_sites::bool OR c.site_id = ANY(@site_ids::bigint[]))
  AND (sqlc.narg(site_id)::bigint IS NULL OR c.site_id = sqlc.narg(site_id))
ORDER BY c.created_at DESC, c.id DESC;

-- name: EnrollmentCodeGet :one
SELECT * FROM enrollment_codes WHERE id = @id;

-- name: EnrollmentCodeDelete :execrows
DELETE FROM enrollment_codes WHERE id = @id;

-- name: EnrollmentCodeRotate :one
-- A rotated code keeps its site, expiry and budget but starts counting anew.
UPDATE enrollment_codes
SET code_hash = @code_hash, code_sealed = @code_sealed, uses = 0, rotated_at = now()
WHERE id = @id
RETURNING *;

-- name: EnrollmentCodeConsume :one
-- Takes one use of a live code; no row when it is unknown, expired or spent.
UPDATE enrollment_codes
SET uses = uses + 1
WHERE code_hash = @code_hash AND expires_at > @now AND uses < max_uses
RETURNING *;

-- name: EnrollmentCodeRelease :exec
-- Gives a use back when the request that took it failed afterwards.
UPDATE enrollment_codes SET uses = greatest(uses - 1, 0) WHERE id = @id;

-- name: ApprovalInsert :one
INSERT INTO device_approvals (id, site_id, enrollment_code_id, hostname, operating_system, agent_version,
    fingerprint, public_key, jkt, remote_addr, status, auto_approved, expires_at, decided_at, decided_by, readmission)
VALUES (@id, @site_id, @enrollment_code_id, @hostname, @operating_system, @agent_version,
    @fingerprint, @public_key, @jkt, @remote_addr, @status, @auto_approved, @expires_at,
    sqlc.narg(decided_at), sqlc.narg(decided_by), @readmission)
RETURNING *;

-- name: ApprovalGet :one
SELECT * FROM device_approvals WHERE id = @id;

-- name: ApprovalOpenByJKT :one
-- A pending or approved, unexpired request for this key: asking again
-- returns it instead of spending another code use.
SELECT * FROM device_approvals
WHERE jkt = @jkt AND status IN ('pending', 'approved') AND expires_at > @now
ORDER BY requested_at DESC LIMIT 1;

-- name: ApprovalList :many
SELECT a.*, s.name AS site_name
FROM device_approvals a JOIN sites s ON s.id = a.site_id
WHERE (@all_sites::bool OR a.site_id = ANY(@site_ids::bigint[]))
  AND (sqlc.narg(status)::text IS NULL OR a.status = sqlc.narg(status))
ORDER BY a.requested_at DESC, a.id
LIMIT 500;

-- name: ApprovalDecide :one
-- Moves a pending request to approved, denied or expired; no row when it
-- was no longer pending (decided already, or expired). admin_approved
-- records an administrator's approval (a readmission needs one).
UPDATE device_approvals
SET status = @status, decided_at = @now, decided_by = @decided_by, admin_approved = @admin_approved
WHERE id = @id AND status = 'pending'
RETURNING *;

-- name: ApprovalExpireApproved :exec
-- Withdraws an approval that no longer suffices (the device was revoked or
-- purged after a non-administrator approved it): the agent's next request
-- starts a new one, which an administrator must approve.
UPDATE device_approvals SET status = 'expired' WHERE id = @id AND status = 'approved';

-- name: ApprovalMarkEnrolled :exec
UPDATE device_approvals SET status = 'enrolled', device_guid = @device_guid WHERE id = @id;

-- name: DeviceGetByGUID :one
SELECT d.*, s.slug AS site_slug, s.name AS site_name
FROM devices d JOIN sites s ON s.id = d.site_id
WHERE d.guid = @guid;

-- name: DeviceGetByJKT :one
SELECT * FROM devices WHERE jkt = @jkt;

-- name: DeviceHostnameOwner :one
SELECT guid, jkt FROM devices WHERE lower(hostname) = lower(@hostname);

-- name: DeviceEnrollInsert :one
INSERT INTO devices (guid, hostname, site_id, agent_id, operating_system, public_key, jkt, fingerprint,
    token_version, agent_version, enrolled_at)
VALUES (@guid, @hostname, @site_id, @agent_id, @operating_system, @public_key, @jkt, @fingerprint,
    @token_version, @agent_version, @now)
RETURNING *;

-- name: DeviceReenroll :one
-- The same key enrolls again (after revoke, or a re-approval): the device
-- keeps its GUID and inventory, and old tokens stop working. Conditional
-- on the trust state and token version enrollment read: no row when a
-- trust action changed the device meanwhile.
UPDATE devices
SET hostname = @hostname, site_id = @site_id, operating_system = @operating_system, fingerprint = @fingerprint,
    agent_version = @agent_version, trust_state = 'active', token_version = token_version + 1,
    enrolled_at = @now, updated_at = @now
WHERE guid = @guid AND trust_state = @from_state AND token_version = @from_version
RETURNING *;

-- name: DevicePurgeGetByJKT :one
SELECT * FROM device_purges WHERE jkt = @jkt ORDER BY purged_at DESC LIMIT 1;

-- name: DevicePurgeGet :one
SELECT * FROM device_purges WHERE guid = @guid;

-- name: DevicePurgeDelete :execrows
-- No row when a concurrent enrollment already lifted the barrier.
DELETE FROM device_purges WHERE guid = @guid;
