-- +goose Up

-- The Internal auth class (SPEC "Authentication"; issue 26): service
-- components sign requests on /api/internal/* and /v1/command with
-- HMAC-SHA256 under one of these keys. The secret is sealed by the master
-- cipher; two keys may be active while callers move to a new one, and a
-- retired key signs nothing that is accepted.
CREATE TABLE internal_hmac_keys (
    key_id        text        PRIMARY KEY,
    secret_sealed bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    retired_at    timestamptz
);

-- Signatures already accepted, shared by every replica so a request is
-- taken once whichever replica it reaches; kept until the timestamp
-- window that would accept them has passed.
CREATE TABLE internal_hmac_seen (
    signature_hash bytea       PRIMARY KEY,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX internal_hmac_seen_expires_idx ON internal_hmac_seen (expires_at);

-- +goose Down
DROP TABLE internal_hmac_seen;
DROP TABLE internal_hmac_keys;
