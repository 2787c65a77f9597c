-- +goose Up

-- The master cipher (aegis): one row. The data key is random and wrapped by a
-- key derived from the operator passphrase with Argon2id; every stored secret
-- is sealed with the data key (AES-256-GCM).
CREATE TABLE aegis_state (
    id              smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    kdf_salt        bytea       NOT NULL,
    kdf_time        integer     NOT NULL,
    kdf_memory_kib  integer     NOT NULL,
    kdf_threads     integer     NOT NULL,
    wrapped_key     bytea       NOT NULL,
    -- Random ID of the data key, stamped into every sealed value so a value
    -- sealed by a cipher that was since reset is recognised, not misread.
    key_id          bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    rotated_at      timestamptz
);

-- Operator accounts. Password hashes and TOTP secrets are sealed with the
-- master cipher, so a locked or reset cipher makes them unusable.
CREATE TABLE users (
    id                  bigserial PRIMARY KEY,
    username            text        NOT NULL UNIQUE CHECK (username = lower(username) AND username <> ''),
    role                text        NOT NULL CHECK (role IN ('admin', 'operator')),
    auth_source         text        NOT NULL DEFAULT 'local' CHECK (auth_source IN ('local', 'directory')),
    password_sealed     bytea,
    totp_sealed         bytea,
    mfa_required        boolean     NOT NULL DEFAULT true,
    mfa_confirmed       boolean     NOT NULL DEFAULT false,
    totp_last_step      bigint      NOT NULL DEFAULT 0,
    recovery_required   boolean     NOT NULL DEFAULT false,
    -- Set when the account first completed sign-in setup. Bootstrap is over
    -- once an activated administrator exists, whatever later happens to
    -- that administrator's authenticator.
    activated_at        timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    password_changed_at timestamptz
);

-- Operator sessions: only hashes of the bearer and CSRF tokens are stored.
CREATE TABLE sessions (
    id              bigserial PRIMARY KEY,
    token_hash      bytea       NOT NULL UNIQUE,
    csrf_hash       bytea       NOT NULL,
    user_id         bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_addr     text        NOT NULL DEFAULT '',
    user_agent      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_seen_at    timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL
);
CREATE INDEX sessions_user_id_idx ON sessions (user_id);

-- Pending-MFA tokens are signed and single use: a successful verification
-- records the token ID here until the token would have expired anyway.
CREATE TABLE pending_token_uses (
    jti        text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);

-- Keys the Engine generates for itself on first start (signing keys).
CREATE TABLE server_keys (
    name       text        PRIMARY KEY,
    key        bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- One-time code shown to the administrator who forces a cipher reset; it is
-- required to recover an administrator afterwards.
CREATE TABLE admin_recovery (
    id         smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    code_hash  bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Fixed-window counters shared by every Engine replica.
CREATE TABLE rate_limits (
    key          text        PRIMARY KEY,
    window_start timestamptz NOT NULL,
    hits         integer     NOT NULL
);

CREATE TABLE sites (
    id          bigserial PRIMARY KEY,
    name        text        NOT NULL CHECK (name <> ''),
    slug        text        NOT NULL UNIQUE CHECK (slug <> '' AND length(slug) <= 51),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Devices grow with the agent work; the foundation needs their site link for
-- the device map and to refuse deleting a site that still has devices.
CREATE TABLE devices (
    guid        text        PRIMARY KEY,
    hostname    text        NOT NULL,
    site_id     bigint      NOT NULL REFERENCES sites (id) ON DELETE RESTRICT,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX devices_site_id_idx ON devices (site_id);

-- Open operator event streams, one row each, across replicas. Rows of a
-- replica that died are swept once seen_at is old.
CREATE TABLE operator_streams (
    id           text        PRIMARY KEY,
    replica_id   text        NOT NULL,
    user_id      bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    username     text        NOT NULL,
    connected_at timestamptz NOT NULL DEFAULT now(),
    seen_at      timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE operator_streams;
DROP TABLE devices;
DROP TABLE sites;
DROP TABLE rate_limits;
DROP TABLE admin_recovery;
DROP TABLE server_keys;
DROP TABLE pending_token_uses;
DROP TABLE sessions;
DROP TABLE users;
DROP TABLE aegis_state;
