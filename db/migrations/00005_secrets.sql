-- +goose Up

-- Stored credentials for remote sessions. The password is sealed by the
-- master cipher; password_key_id records which data key sealed it, so a
-- listing can tell a value sealed by a since-reset cipher without trying to
-- decrypt it. site_id NULL means global (usable on every site).
CREATE TABLE stored_credentials (
    id              bigserial   PRIMARY KEY,
    name            text        NOT NULL CHECK (name <> ''),
    connection_type text        NOT NULL CHECK (connection_type IN ('Windows', 'WinRM')),
    credential_type text        NOT NULL CHECK (credential_type IN ('Machine', 'Domain')),
    username        text        NOT NULL CHECK (username <> ''),
    domain          text        NOT NULL DEFAULT '',
    password_sealed bytea       NOT NULL,
    password_key_id bytea       NOT NULL,
    site_id         bigint      REFERENCES sites (id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- One name per scope: two globals, or two of one site, may not share a name.
CREATE UNIQUE INDEX stored_credentials_scope_name_key
    ON stored_credentials (coalesce(site_id, 0), lower(name));
CREATE INDEX stored_credentials_site_idx ON stored_credentials (site_id);

-- The Engine's source-hosting (GitHub) token: at most one, sealed.
CREATE TABLE source_token (
    id          smallint    PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    token_sealed bytea      NOT NULL,
    key_id      bytea       NOT NULL,
    updated_by  text        NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Branch heads answered by /api/repo/current_hash, shared by every replica
-- so a fleet of agents asking the same question costs one upstream call.
CREATE TABLE repo_hash_cache (
    repo       text        NOT NULL,
    branch     text        NOT NULL,
    hash       text        NOT NULL,
    fetched_at timestamptz NOT NULL,
    PRIMARY KEY (repo, branch)
);

-- +goose Down
DROP TABLE repo_hash_cache;
DROP TABLE source_token;
DROP TABLE stored_credentials;
