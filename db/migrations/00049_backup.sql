-- +goose Up

-- Issue 26: a backup being restored (docs/architecture.md "Backup and
-- restore"). The request handler decrypts and validates the file, then
-- stages its payload here; the restore:<id> workflow (or, on a fresh
-- Engine without a master cipher, the bootstrap route itself) applies it
-- in one transaction that also deletes this row, so an interrupted restore
-- either has applied everything and consumed the row, or nothing. The
-- payload is the gzip-compressed JSON of the exported rows: what the
-- database itself holds, every secret still sealed by the master cipher or
-- hashed. Restore truncates every other table, never this one.
CREATE TABLE backup_restores (
    id             text        PRIMARY KEY,
    schema_version integer     NOT NULL,
    payload        bytea       NOT NULL,
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE backup_restores;
