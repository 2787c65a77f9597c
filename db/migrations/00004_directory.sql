-- +goose Up

-- Directory providers (LDAP, LDAPS, Active Directory simple bind). The
-- service-account password is sealed with the master cipher. Mappings are
-- small lists edited as a whole with the provider, so they live as JSON:
-- role_mappings [{"group", "role"}], site_mappings [{"group", "site_ids"}].
CREATE TABLE directory_providers (
    id                     bigserial   PRIMARY KEY,
    name                   text        NOT NULL UNIQUE CHECK (name <> ''),
    kind                   text        NOT NULL CHECK (kind IN ('ldap', 'ldaps', 'active_directory')),
    host                   text        NOT NULL CHECK (host <> ''),
    port                   integer     NOT NULL CHECK (port BETWEEN 1 AND 65535),
    base_dn                text        NOT NULL CHECK (base_dn <> ''),
    user_filter            text        NOT NULL DEFAULT '',
    username_attribute     text        NOT NULL,
    group_mode             text        NOT NULL CHECK (group_mode IN ('member_of', 'group_search')),
    group_base_dn          text        NOT NULL DEFAULT '',
    group_member_attribute text        NOT NULL DEFAULT 'member',
    bind_dn                text        NOT NULL DEFAULT '',
    bind_password_sealed   bytea,
    ca_pem                 text        NOT NULL DEFAULT '',
    host_overrides         jsonb       NOT NULL DEFAULT '{}',
    role_mappings          jsonb       NOT NULL DEFAULT '[]',
    site_mappings          jsonb       NOT NULL DEFAULT '[]',
    -- Enabling needs a passing test of the current connection settings:
    -- changing them clears the last test result and disables the provider.
    enabled                boolean     NOT NULL DEFAULT false CHECK (NOT enabled OR last_test_ok IS TRUE),
    last_test_ok           boolean,
    last_test_message      text        NOT NULL DEFAULT '',
    last_test_at           timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);

-- Cached directory accounts: users with auth_source 'directory' keep the
-- provider that signed them in and their DN; an administrator or a sync
-- may disable one. A provider cannot go while cached users point at it.
ALTER TABLE users
    ADD COLUMN directory_provider_id bigint REFERENCES directory_providers (id) ON DELETE RESTRICT,
    ADD COLUMN directory_dn          text    NOT NULL DEFAULT '',
    ADD COLUMN directory_disabled    boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT users_directory_link CHECK ((auth_source = 'directory') = (directory_provider_id IS NOT NULL));
CREATE INDEX users_directory_provider_idx ON users (directory_provider_id) WHERE directory_provider_id IS NOT NULL;

-- +goose Down
DROP INDEX users_directory_provider_idx;
ALTER TABLE users
    DROP CONSTRAINT users_directory_link,
    DROP COLUMN directory_disabled,
    DROP COLUMN directory_dn,
    DROP COLUMN directory_provider_id;
DROP TABLE directory_providers;
