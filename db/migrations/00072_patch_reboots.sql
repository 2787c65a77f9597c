-- Patch reboots (issue 24): one row per patch_reboot_request, a step in
-- the device's patch-lane:<guid> workflow after the installs queued
-- before it. The agent skips it with skipped_logged_in_user while a user
-- is signed in unless the policy forces it, answers not_required when
-- asked "when required" and nothing needs a reboot, else schedules it.

-- +goose Up
CREATE TABLE patch_reboots (
    id            text        PRIMARY KEY,
    device_guid   text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    when_required boolean     NOT NULL,
    forced        boolean     NOT NULL,
    policy_id     bigint,
    state         text        NOT NULL DEFAULT 'queued'
        CHECK (state IN ('queued', 'running', 'scheduled', 'skipped_logged_in_user', 'not_required', 'failed')),
    message       text        NOT NULL DEFAULT '',
    signed_in     text[]      NOT NULL DEFAULT '{}',
    requested_by  text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz
);
CREATE INDEX patch_reboots_device_idx ON patch_reboots (device_guid, created_at DESC);
-- One open reboot per device: asking again while one waits is the same.
CREATE UNIQUE INDEX patch_reboots_open_idx ON patch_reboots (device_guid) WHERE state IN ('queued', 'running');

-- +goose Down
DROP TABLE patch_reboots;
