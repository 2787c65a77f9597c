-- +goose Up

-- Metadata fields (issue 9, SPEC "Metadata field definition and value").
-- 500 definitions exist by definition; only labels an administrator set are
-- stored. Reserved numbers 1..10 are constants in Go (internal/metadata):
-- a row stored for one of them (an import, an old restore) is ignored.
CREATE TABLE metadata_field_definitions (
    field_number int         PRIMARY KEY CHECK (field_number BETWEEN 1 AND 500),
    description  text        NOT NULL CHECK (length(description) <= 120),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    updated_by   text        NOT NULL DEFAULT ''
);

-- One value per device and field. value_b64 is the base64 of the UTF-8
-- value (SPEC: stored base64-encoded); '' is a cleared field. A cleared
-- field keeps its row: its modified_at is what an older write arriving
-- later (an agent that was offline) loses against ("newest modified_at
-- wins"). Filters decode with convert_from(decode(value_b64, 'base64'), 'UTF8').
CREATE TABLE device_metadata_values (
    device_guid  text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    field_number int         NOT NULL CHECK (field_number BETWEEN 1 AND 500),
    value_b64    text        NOT NULL DEFAULT '',
    modified_at  timestamptz NOT NULL,
    -- 'agent' or 'operator:<username>'
    source       text        NOT NULL,
    -- The device's metadata revision of the operator write that set it, 0
    -- when the agent wrote it (the agent knows its own writes).
    revision     bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (device_guid, field_number)
);
-- "Value of field n for many devices" (filters and sorting by a metadata
-- column join on (field_number, device_guid)).
CREATE INDEX device_metadata_values_field_idx ON device_metadata_values (field_number, device_guid);

-- Per-device metadata revision: bumped by every operator write, so an
-- agent can tell from one number in the heartbeat answer that it must
-- fetch operator edits (docs/agent.md "Metadata sync"). A device without a
-- row is at revision 0.
CREATE SEQUENCE device_metadata_revision_seq;
CREATE TABLE device_metadata_sync (
    device_guid text   PRIMARY KEY REFERENCES devices (guid) ON DELETE CASCADE,
    revision    bigint NOT NULL DEFAULT 0
);

-- Bundled assemblies (the Windows scripts that collect reserved metadata
-- fields 1 and 2): bundled_key names the bundle, bundled_sha256 is the
-- body last seeded, so a release with a new body adds a version instead of
-- overwriting. Bundled assemblies cannot be deleted.
ALTER TABLE assemblies
    ADD COLUMN bundled_key    text UNIQUE,
    ADD COLUMN bundled_sha256 bytea;

-- +goose Down
ALTER TABLE assemblies DROP COLUMN bundled_key, DROP COLUMN bundled_sha256;
DROP TABLE device_metadata_sync;
DROP SEQUENCE device_metadata_revision_seq;
DROP TABLE device_metadata_values;
DROP TABLE metadata_field_definitions;
