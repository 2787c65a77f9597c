-- Ending the live file transfers of devices whose trust or site changed
-- (issue 21 item 6). Kept apart from file_transfers.sql: the trust and
-- site-move paths own it.

-- name: FileTransferEndForDevices :many
-- Ends the live transfers of the devices as a cancel does (the agent sees
-- cancel_requested; the workflow, once signalled, closes the activity row
-- and drops the content), except those recorded under keep_site_id (a
-- site move leaves transfers already on the new site alone; 0 keeps none).
UPDATE file_transfers
SET cancel_requested = true, state = 'cancelled', error_code = 'transfer_cancelled', error_message = @error_message,
    ended_at = now(), updated_at = now()
WHERE device_guid = ANY (@guids::text[]) AND state IN ('queued', 'running') AND site_id <> @keep_site_id::bigint
RETURNING id;
