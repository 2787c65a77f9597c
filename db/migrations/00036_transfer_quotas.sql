-- +goose Up
-- Transfer quotas (issue 21 item 8, docs/architecture.md "Transfer
-- quotas"): bytes_reserved is what a transfer holds of the staging
-- budget: an upload's declared size (or its staged bytes as they arrive),
-- a download's artifact as it streams in, then the exact size once
-- staged. It counts while the transfer's content exists (purged_at IS
-- NULL), so usage is derived from the transfers themselves: a purge, the
-- workflow's or the sweep's, releases it and nothing can drift.
ALTER TABLE file_transfers ADD COLUMN bytes_reserved bigint NOT NULL DEFAULT 0 CHECK (bytes_reserved >= 0);
UPDATE file_transfers t
SET bytes_reserved = (SELECT coalesce(sum(octet_length(c.data)), 0) FROM file_transfer_chunks c WHERE c.transfer_id = t.id)
WHERE purged_at IS NULL;
-- Live transfers (the concurrency caps) by operator.
CREATE INDEX file_transfers_live_idx ON file_transfers (actor) WHERE state IN ('queued', 'running');

-- +goose Down
DROP INDEX file_transfers_live_idx;
ALTER TABLE file_transfers DROP COLUMN bytes_reserved;
