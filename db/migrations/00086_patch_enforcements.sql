-- Patch policy enforcement (issue 24, SPEC agent behaviour 11): one row
-- per patch_policy_enforcement_request, a step in the device's
-- patch-lane:<guid> workflow. The Engine asks a Windows device for its
-- effective policy's enforcement mode (unmanaged, managed, frozen) on its
-- first evaluation and whenever that mode changes; the newest row is the
-- device's enforcement state (SPEC backup: excluded, like the other patch
-- run history; a restored Engine asks every device again).

-- +goose Up
CREATE TABLE patch_enforcements (
    id           text        PRIMARY KEY,
    device_guid  text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    mode         text        NOT NULL CHECK (mode IN ('unmanaged', 'managed', 'frozen')),
    policy_id    bigint,
    state        text        NOT NULL DEFAULT 'queued'
        CHECK (state IN ('queued', 'running', 'applied', 'restored', 'not_managed', 'failed')),
    message      text        NOT NULL DEFAULT '',
    -- values are the Windows Update policy values as the agent left them.
    "values"     jsonb       NOT NULL DEFAULT '[]',
    requested_by text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz
);
CREATE INDEX patch_enforcements_device_idx ON patch_enforcements (device_guid, created_at DESC);

-- +goose Down
DROP TABLE patch_enforcements;
