-- Cloned agents (issue 28; docs/architecture.md "Device identity and clones").

-- name: CloneTicketInsert :exec
INSERT INTO device_clone_tickets (ticket_hash, device_guid, site_id, boot_id, reason, expires_at)
VALUES (@ticket_hash, @device_guid, @site_id, @boot_id, @reason, @expires_at);

-- name: CloneTicketConsume :one
-- Spends an unused, unexpired ticket on an enrollment request; no row when
-- it is unknown, used or expired.
UPDATE device_clone_tickets SET used_at = @now, approval_id = @approval_id
WHERE ticket_hash = @ticket_hash AND used_at IS NULL AND expires_at > @now
RETURNING *;

-- name: CloneTicketByApproval :one
SELECT * FROM device_clone_tickets WHERE approval_id = @approval_id;

-- name: CloneTicketDeleteExpired :execrows
DELETE FROM device_clone_tickets WHERE expires_at < @now AND used_at IS NULL;

-- name: DeviceSetClonedFrom :exec
UPDATE devices SET cloned_from = @cloned_from WHERE guid = @guid;

-- name: CloneTicketPeek :one
SELECT * FROM device_clone_tickets WHERE ticket_hash = @ticket_hash;
