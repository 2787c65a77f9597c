-- +goose Up

-- Issue 13 item 10: a key whose device is revoked, quarantined or purged
-- comes back only through an administrator's explicit approval.
-- readmission records, at request time, that the key belongs to such a
-- device (the request is then never auto-approved and only an
-- administrator may approve it); admin_approved records that the decision
-- that approved it was an administrator's, which enrollment checks again
-- against the device's state when the agent collects its tokens.
ALTER TABLE device_approvals
    ADD COLUMN readmission    boolean NOT NULL DEFAULT false,
    ADD COLUMN admin_approved boolean NOT NULL DEFAULT false;

-- Issue 13 item 9: a rotated refresh token names the token it replaced, so
-- a retry of a just-used token (its answer was lost) can tell whether the
-- successor was ever used, and retire exactly that successor.
ALTER TABLE refresh_tokens ADD COLUMN parent_hash bytea;
CREATE INDEX refresh_tokens_parent_idx ON refresh_tokens (parent_hash) WHERE parent_hash IS NOT NULL;

-- +goose Down
DROP INDEX refresh_tokens_parent_idx;
ALTER TABLE refresh_tokens DROP COLUMN parent_hash;
ALTER TABLE device_approvals DROP COLUMN admin_approved, DROP COLUMN readmission;
