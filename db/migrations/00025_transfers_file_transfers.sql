-- +goose Up
-- File transfers (issue 10): browser uploads staged for an agent to fetch,
-- and download artifacts an agent streamed in. Content lives here as
-- chunk rows, so any Engine replica serves it and nothing lives only in
-- one process's memory or disk (docs/architecture.md "File transfers").
CREATE TABLE file_transfers (
    id               text        PRIMARY KEY,
    device_guid      text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    hostname         text        NOT NULL,
    site_id          bigint      NOT NULL,
    direction        text        NOT NULL CHECK (direction IN ('upload', 'download')),
    state            text        NOT NULL DEFAULT 'queued'
                                 CHECK (state IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    -- upload: the absolute directory, the conflict policy and the
    -- manifest's empty directories; download: the requested paths.
    destination      text        NOT NULL DEFAULT '',
    conflict         text        NOT NULL DEFAULT 'rename' CHECK (conflict IN ('overwrite', 'skip', 'rename')),
    directories      text[]      NOT NULL DEFAULT '{}',
    paths            text[]      NOT NULL DEFAULT '{}',
    bytes_total      bigint      NOT NULL DEFAULT 0,
    bytes_done       bigint      NOT NULL DEFAULT 0,
    -- the download artifact's file name (one file's own name, or a .zip)
    content_name     text        NOT NULL DEFAULT '',
    cancel_requested boolean     NOT NULL DEFAULT false,
    error_code       text        NOT NULL DEFAULT '',
    error_message    text        NOT NULL DEFAULT '',
    actor            text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    ended_at         timestamptz,
    -- set once the staged content was deleted (retention or sweep)
    purged_at        timestamptz
);
CREATE INDEX file_transfers_device_idx ON file_transfers (device_guid, created_at);
CREATE INDEX file_transfers_open_idx ON file_transfers (updated_at) WHERE purged_at IS NULL;

-- One staged upload file, or (downloads) the one artifact, item 1.
CREATE TABLE file_transfer_items (
    transfer_id text    NOT NULL REFERENCES file_transfers (id) ON DELETE CASCADE,
    item_id     integer NOT NULL,
    name        text    NOT NULL,
    size        bigint  NOT NULL DEFAULT 0,
    sha256      text    NOT NULL DEFAULT '',
    state       text    NOT NULL DEFAULT 'staged'
                        CHECK (state IN ('staged', 'running', 'completed', 'skipped', 'failed')),
    bytes_done  bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (transfer_id, item_id)
);

-- Content in chunks of at most 1 MiB, numbered from 0 per item.
CREATE TABLE file_transfer_chunks (
    transfer_id text    NOT NULL REFERENCES file_transfers (id) ON DELETE CASCADE,
    item_id     integer NOT NULL,
    seq         integer NOT NULL,
    data        bytea   NOT NULL,
    PRIMARY KEY (transfer_id, item_id, seq)
);
-- Files are mostly compressed already (archives, media, binaries):
-- PostgreSQL's pglz would spend CPU on every chunk for little gain.
ALTER TABLE file_transfer_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- +goose Down
DROP TABLE file_transfer_chunks;
DROP TABLE file_transfer_items;
DROP TABLE file_transfers;
