-- File transfers and their content store (internal/transfers).

-- name: FileTransferInsert :one
INSERT INTO file_transfers (id, device_guid, hostname, site_id, direction, destination, conflict, directories, paths, actor)
VALUES (@id, @device_guid, @hostname, @site_id, @direction, @destination, @conflict, @directories::text[], @paths::text[], @actor)
RETURNING *;

-- name: FileTransferGet :one
SELECT * FROM file_transfers WHERE id = @id;

-- name: FileTransferGetInScope :one
-- An operator's view: a transfer of the device now named hostname, inside
-- the operator's sites (the transfer's own site). The device is matched by
-- GUID, not by the name the transfer was made under: a device renamed by
-- re-enrolment keeps its transfers, and a new device given an old name
-- never sees the old device's.
SELECT * FROM file_transfers
WHERE id = @id
  AND device_guid = (SELECT guid FROM devices WHERE lower(hostname) = lower(@hostname::text))
  AND (@all_sites::boolean OR site_id = ANY(@site_ids::bigint[]));

-- name: FileTransferGetForDevice :one
-- An agent's view: only its own device's transfers.
SELECT * FROM file_transfers WHERE id = @id AND device_guid = @device_guid;

-- name: FileTransferItemInsert :exec
INSERT INTO file_transfer_items (transfer_id, item_id, name, size, sha256)
VALUES (@transfer_id, @item_id, @name, @size, @sha256);

-- name: FileTransferItemList :many
SELECT * FROM file_transfer_items WHERE transfer_id = @transfer_id ORDER BY item_id;

-- name: FileTransferItemGet :one
SELECT * FROM file_transfer_items WHERE transfer_id = @transfer_id AND item_id = @item_id;

-- name: FileTransferItemProgress :execrows
-- An agent's progress on one item; a finished item keeps its state.
UPDATE file_transfer_items
SET bytes_done = @bytes_done, state = @state
WHERE transfer_id = @transfer_id AND item_id = @item_id AND state NOT IN ('completed', 'skipped', 'failed');

-- name: FileTransferItemFinishDownload :exec
-- The download artifact arrived whole.
UPDATE file_transfer_items
SET name = @name, size = @size, sha256 = @sha256, bytes_done = @size, state = 'completed'
WHERE transfer_id = @transfer_id AND item_id = 1;

-- name: FileTransferSetTotals :exec
UPDATE file_transfers SET bytes_total = @bytes_total, updated_at = now() WHERE id = @id;

-- name: FileTransferSumProgress :one
-- Bytes done of an upload and how many items are still open.
SELECT coalesce(sum(bytes_done), 0)::bigint AS bytes_done,
       count(*) FILTER (WHERE state IN ('staged', 'running'))::bigint AS open_items,
       count(*) FILTER (WHERE state = 'failed')::bigint AS failed_items
FROM file_transfer_items WHERE transfer_id = @transfer_id;

-- name: FileTransferSetProgress :execrows
UPDATE file_transfers
SET bytes_done = @bytes_done, state = 'running', updated_at = now(),
    bytes_total = CASE WHEN @bytes_total::bigint > 0 THEN @bytes_total::bigint ELSE bytes_total END
WHERE id = @id AND state IN ('queued', 'running');

-- name: FileTransferStart :execrows
-- Each request the agent accepted (the first, or one after a stall)
-- restarts the stall clock: the workflow measures silence since then.
UPDATE file_transfers SET state = 'running', updated_at = now() WHERE id = @id AND state IN ('queued', 'running');

-- name: FileTransferFinish :execrows
-- Ends a transfer once: the first outcome wins.
UPDATE file_transfers
SET state = @state, error_code = @error_code, error_message = @error_message, content_name = coalesce(nullif(@content_name::text, ''), content_name),
    bytes_done = CASE WHEN @state = 'completed' THEN bytes_total ELSE bytes_done END,
    ended_at = now(), updated_at = now()
WHERE id = @id AND state IN ('queued', 'running');

-- name: FileTransferRequestCancel :execrows
UPDATE file_transfers
SET cancel_requested = true, state = 'cancelled', error_code = 'transfer_cancelled', error_message = @error_message,
    ended_at = now(), updated_at = now()
WHERE id = @id AND state IN ('queued', 'running');

-- name: FileTransferSetDownloadTotal :exec
UPDATE file_transfers SET bytes_total = @bytes_total, content_name = @content_name, updated_at = now()
WHERE id = @id AND state IN ('queued', 'running');

-- name: FileTransferChunkInsert :exec
INSERT INTO file_transfer_chunks (transfer_id, item_id, seq, data) VALUES (@transfer_id, @item_id, @seq, @data);

-- name: FileTransferChunkGet :one
SELECT data FROM file_transfer_chunks WHERE transfer_id = @transfer_id AND item_id = @item_id AND seq = @seq;

-- name: FileTransferChunkDeleteItem :exec
DELETE FROM file_transfer_chunks WHERE transfer_id = @transfer_id AND item_id = @item_id;

-- name: FileTransferPurge :execrows
-- Deletes a transfer's staged content once (retention or clean-up).
WITH gone AS (DELETE FROM file_transfer_chunks WHERE transfer_id = @id)
UPDATE file_transfers SET purged_at = now() WHERE id = @id AND purged_at IS NULL;

-- name: FileTransferListStale :many
-- Transfers whose content outlived its retention, uploads whose staging
-- request died before a workflow took them, and running transfers idle so
-- long that their workflow is gone (it fails a silent one within
-- minutes): the sweep, so none holds its quota forever.
SELECT id, state FROM file_transfers
WHERE (purged_at IS NULL
    AND ((ended_at IS NOT NULL AND ended_at < now() - make_interval(secs => @retention_seconds::float8))
      OR (state = 'queued' AND updated_at < now() - make_interval(secs => @stale_seconds::float8))))
   OR (state = 'running' AND updated_at < now() - make_interval(secs => @stale_seconds::float8))
ORDER BY updated_at
LIMIT 500;

-- Transfer quotas (docs/architecture.md "Transfer quotas").

-- name: FileTransferQuotaLock :exec
-- Serializes admissions and reservations against the transfer budgets
-- across replicas for the rest of the transaction (its own key space).
SELECT pg_advisory_xact_lock(hashtext('cairn.transfer_quotas'));

-- name: FileTransferUsage :one
-- What the transfers hold now, all together and @actor's: live transfers
-- (queued or running) and bytes of content still on the Engine.
SELECT count(*) FILTER (WHERE state IN ('queued', 'running'))::bigint AS live,
       coalesce(sum(bytes_reserved) FILTER (WHERE purged_at IS NULL), 0)::bigint AS bytes,
       count(*) FILTER (WHERE state IN ('queued', 'running') AND actor = @actor)::bigint AS actor_live,
       coalesce(sum(bytes_reserved) FILTER (WHERE purged_at IS NULL AND actor = @actor), 0)::bigint AS actor_bytes
FROM file_transfers
WHERE purged_at IS NULL OR state IN ('queued', 'running');

-- name: FileTransferReserve :execrows
-- Adds to what a transfer holds; a transfer that ended or was purged
-- takes nothing more.
UPDATE file_transfers SET bytes_reserved = bytes_reserved + @bytes::bigint
WHERE id = @id AND purged_at IS NULL AND state IN ('queued', 'running');

-- name: FileTransferSetReserved :exec
-- Sets what a transfer holds to its staged content's exact size.
UPDATE file_transfers SET bytes_reserved = @bytes::bigint WHERE id = @id AND purged_at IS NULL;

-- name: FileTransferReserveStaged :exec
-- Re-derives what a transfer holds from its chunk rows (after an earlier
-- attempt's content was deleted).
UPDATE file_transfers
SET bytes_reserved = (SELECT coalesce(sum(octet_length(data)), 0) FROM file_transfer_chunks WHERE transfer_id = @id)
WHERE id = @id AND purged_at IS NULL;
