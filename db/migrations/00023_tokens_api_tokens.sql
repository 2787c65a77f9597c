-- +goose Up

-- Personal API tokens (issue 12): an operator's bearer credential for
-- automation. Only the SHA-256 of the token text is kept; the text is shown
-- once, at creation. A token carries no role or sites of its own: each use
-- resolves the owner's current role and site assignments, so a demotion or
-- a removed site applies at once, and deleting the owner deletes the
-- tokens. created_by is who made it (an administrator may make one for a
-- service account); NULL once that administrator is deleted.
CREATE TABLE api_tokens (
    id            bigserial   PRIMARY KEY,
    user_id       bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_by    bigint      REFERENCES users (id) ON DELETE SET NULL,
    name          text        NOT NULL CHECK (name <> ''),
    token_hash    bytea       NOT NULL UNIQUE,
    access        text        NOT NULL CHECK (access IN ('read', 'write')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    last_used_at  timestamptz
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, id);

-- The audit trail names the token a request used besides the operator. No
-- foreign key: the entry outlives the token's revocation.
ALTER TABLE audit_log ADD COLUMN api_token_id bigint;

-- +goose Down
ALTER TABLE audit_log DROP COLUMN api_token_id;
DROP TABLE api_tokens;
