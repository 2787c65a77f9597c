-- Patch inventory beyond the seed (issue 24): what the providers report
-- about an update (security source, KBs, categories, reboot behaviour,
-- size, release), the scan's machine-wide status (reboot required), and
-- indexes for the fleet-wide audit (GET /api/patches/audit) at 50,000
-- devices with about 20 rows each.

-- +goose Up
ALTER TABLE device_patches
    ADD COLUMN security        boolean     NOT NULL DEFAULT false,
    ADD COLUMN origin          text        NOT NULL DEFAULT '',
    ADD COLUMN kbs             text[]      NOT NULL DEFAULT '{}',
    ADD COLUMN categories      text[]      NOT NULL DEFAULT '{}',
    ADD COLUMN reboot_behavior text        NOT NULL DEFAULT '',
    ADD COLUMN size_bytes      bigint      NOT NULL DEFAULT 0,
    ADD COLUMN released_at     timestamptz;

-- The audit pages devices by hostname and walks each one's rows by
-- primary key; these serve its filters across the fleet.
CREATE INDEX device_patches_key_idx ON device_patches (patch_key, device_guid);
-- kbs holds every KB of a row, kb among them (the ingest keeps it so).
CREATE INDEX device_patches_kbs_idx ON device_patches USING gin (kbs);
CREATE INDEX device_patches_security_idx ON device_patches (device_guid) WHERE state = 'pending' AND security;
CREATE INDEX devices_hostname_guid_idx ON devices (lower(hostname), guid);

-- The last patch scan's machine-wide result, one row per device.
CREATE TABLE device_patch_status (
    device_guid     text        PRIMARY KEY REFERENCES devices (guid) ON DELETE CASCADE,
    provider        text        NOT NULL,
    reboot_required boolean     NOT NULL,
    reboot_packages text[]      NOT NULL DEFAULT '{}',
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX device_patch_status_reboot_idx ON device_patch_status (device_guid) WHERE reboot_required;

-- +goose Down
DROP TABLE device_patch_status;
DROP INDEX devices_hostname_guid_idx;
DROP INDEX device_patches_security_idx;
DROP INDEX device_patches_kbs_idx;
DROP INDEX device_patches_key_idx;
ALTER TABLE device_patches
    DROP COLUMN security, DROP COLUMN origin, DROP COLUMN kbs, DROP COLUMN categories,
    DROP COLUMN reboot_behavior, DROP COLUMN size_bytes, DROP COLUMN released_at;
