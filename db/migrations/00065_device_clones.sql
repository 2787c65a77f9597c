-- +goose Up

-- Issue 28 "Cloned machines" (docs/architecture.md "Device identity and
-- clones"). A device's identity is its key and GUID; when the same key and
-- GUID run on two machines, the copy that is not the device's current
-- holder is told to enroll again with a one-time clone ticket, and the
-- device it becomes records which device it was copied from.
-- No foreign key: the original may be purged later (the clone keeps the
-- GUID it came from), and a restore inserts devices in any order.
ALTER TABLE devices ADD COLUMN cloned_from text;

-- The boot ID of the agent that used a refresh token: a used token
-- presented again from another boot is a copy of the agent (a clone),
-- not a replay by the holder.
ALTER TABLE refresh_tokens ADD COLUMN used_boot_id text NOT NULL DEFAULT '';

-- One-time clone tickets, stored hashed. A ticket lets one new key enroll
-- into the original's site without an administrator (the original was
-- approved); approval_id is the request it was spent on.
CREATE TABLE device_clone_tickets (
    ticket_hash bytea       PRIMARY KEY,
    device_guid text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    site_id     bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    boot_id     text        NOT NULL DEFAULT '',
    reason      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    approval_id text        REFERENCES device_approvals (id) ON DELETE SET NULL
);
CREATE INDEX device_clone_tickets_device_idx ON device_clone_tickets (device_guid);
CREATE INDEX device_clone_tickets_approval_idx ON device_clone_tickets (approval_id);

-- +goose Down
DROP TABLE device_clone_tickets;
ALTER TABLE refresh_tokens DROP COLUMN used_boot_id;
ALTER TABLE devices DROP COLUMN cloned_from;
