-- Patch installs (issue 24): one row per requested install of one patch
-- on one device, run by the device's patch-lane:<guid> workflow. Its
-- state is "installed" only after the re-scan that follows the attempt
-- shows the patch installed (or no longer pending).

-- +goose Up
CREATE TABLE patch_installs (
    id               text        PRIMARY KEY,
    device_guid      text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    patch_key        text        NOT NULL,
    kb               text        NOT NULL DEFAULT '',
    update_id        text        NOT NULL DEFAULT '',
    revision         integer     NOT NULL DEFAULT 0,
    package          text        NOT NULL DEFAULT '',
    version          text        NOT NULL DEFAULT '',
    title            text        NOT NULL,
    state            text        NOT NULL DEFAULT 'queued'
        CHECK (state IN ('queued', 'running', 'installed', 'already_installed', 'failed', 'not_confirmed')),
    phase            text        NOT NULL DEFAULT '',
    percent          integer     NOT NULL DEFAULT 0 CHECK (percent BETWEEN 0 AND 100),
    message          text        NOT NULL DEFAULT '',
    exit_code        integer,
    log_excerpt      text        NOT NULL DEFAULT '',
    scheduled_job_id bigint,
    run_id           text        NOT NULL DEFAULT '',
    requested_by     text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    progress_at      timestamptz,
    finished_at      timestamptz
);
CREATE INDEX patch_installs_device_idx ON patch_installs (device_guid, created_at DESC);
-- One open install per patch and device: asking again while one is
-- queued or running is the same install.
CREATE UNIQUE INDEX patch_installs_open_idx ON patch_installs (device_guid, patch_key)
    WHERE state IN ('queued', 'running');

-- +goose Down
DROP TABLE patch_installs;
