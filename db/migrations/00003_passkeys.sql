-- +goose Up

-- WebAuthn credentials (passkeys). The public key and the rest of the
-- credential record are not secret; sign_count is kept in its own column so
-- the regression check (a cloned authenticator) is one atomic update.
CREATE TABLE passkeys (
    id            bigserial   PRIMARY KEY,
    user_id       bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id bytea       NOT NULL UNIQUE,
    credential    jsonb       NOT NULL,
    sign_count    bigint      NOT NULL DEFAULT 0,
    label         text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz
);
CREATE INDEX passkeys_user_idx ON passkeys (user_id);

-- Ceremony state between options and verify, so any replica can finish a
-- ceremony. The client holds the ceremony ID; only its hash is stored. A
-- row is deleted when it is used, so each ceremony is single use.
CREATE TABLE webauthn_ceremonies (
    id_hash    bytea       PRIMARY KEY,
    kind       text        NOT NULL CHECK (kind IN ('register', 'authenticate')),
    user_id    bigint      REFERENCES users (id) ON DELETE CASCADE,
    session    jsonb       NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX webauthn_ceremonies_expires_idx ON webauthn_ceremonies (expires_at);

-- +goose Down
DROP TABLE webauthn_ceremonies;
DROP TABLE passkeys;
