-- +goose Up

-- Temporary auto-approval: enrollment requests for the site are approved at
-- once until this time (NULL: off).
ALTER TABLE sites ADD COLUMN auto_approve_until timestamptz;

-- Enrollment codes, per site. The code is looked up by its SHA-256 and kept
-- sealed with the master cipher so an admin can copy it again.
CREATE TABLE enrollment_codes (
    id          bigserial   PRIMARY KEY,
    site_id     bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    code_hash   bytea       NOT NULL UNIQUE,
    code_sealed bytea       NOT NULL,
    expires_at  timestamptz NOT NULL,
    max_uses    integer     NOT NULL CHECK (max_uses > 0),
    uses        integer     NOT NULL DEFAULT 0 CHECK (uses >= 0),
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    rotated_at  timestamptz
);
CREATE INDEX enrollment_codes_site_idx ON enrollment_codes (site_id);

-- Devices: identity, trust and the light state heartbeats keep fresh.
ALTER TABLE devices
    ADD COLUMN agent_id         text        NOT NULL DEFAULT '',
    ADD COLUMN description      text        NOT NULL DEFAULT '',
    ADD COLUMN operating_system text        NOT NULL DEFAULT '',
    ADD COLUMN public_key       bytea,
    ADD COLUMN jkt              text        NOT NULL DEFAULT '',
    ADD COLUMN fingerprint      text        NOT NULL DEFAULT '',
    ADD COLUMN trust_state      text        NOT NULL DEFAULT 'active'
        CHECK (trust_state IN ('active', 'quarantined', 'revoked')),
    ADD COLUMN token_version    integer     NOT NULL DEFAULT 1,
    ADD COLUMN agent_version    text        NOT NULL DEFAULT '',
    ADD COLUMN boot_id          text        NOT NULL DEFAULT '',
    ADD COLUMN last_seen        timestamptz,
    ADD COLUMN metrics          jsonb       NOT NULL DEFAULT '{}',
    ADD COLUMN last_status      jsonb       NOT NULL DEFAULT '{}',
    -- The site worker holding the agent's socket: its replica and when it
    -- last confirmed the socket alive. agent_socket is derived from these.
    ADD COLUMN socket_replica   text,
    ADD COLUMN socket_seen_at   timestamptz,
    ADD COLUMN helper_contexts  text[]      NOT NULL DEFAULT '{}',
    ADD COLUMN enrolled_at      timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN updated_at       timestamptz NOT NULL DEFAULT now();
CREATE UNIQUE INDEX devices_hostname_idx ON devices (lower(hostname));
CREATE UNIQUE INDEX devices_jkt_idx ON devices (jkt) WHERE jkt <> '';

-- Enrollment requests waiting for, or past, an operator's decision. The
-- decision itself is the enrollment:<id> workflow's; these rows are what
-- the console lists and what enroll/poll reads.
CREATE TABLE device_approvals (
    id                 text        PRIMARY KEY,
    site_id            bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    enrollment_code_id bigint      REFERENCES enrollment_codes (id) ON DELETE SET NULL,
    hostname           text        NOT NULL,
    operating_system   text        NOT NULL DEFAULT '',
    agent_version      text        NOT NULL DEFAULT '',
    fingerprint        text        NOT NULL,
    public_key         bytea       NOT NULL,
    jkt                text        NOT NULL,
    remote_addr        text        NOT NULL DEFAULT '',
    status             text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'enrolled')),
    auto_approved      boolean     NOT NULL DEFAULT false,
    requested_at       timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz NOT NULL,
    decided_at         timestamptz,
    decided_by         text,
    device_guid        text
);
CREATE INDEX device_approvals_status_idx ON device_approvals (status, requested_at);
CREATE INDEX device_approvals_jkt_idx ON device_approvals (jkt);

-- Purge barriers: a purged device's GUID and key. Refresh for it answers
-- 401 device_purged; a fresh approval for the same key recreates the GUID
-- with a token version above this one.
CREATE TABLE device_purges (
    guid          text        PRIMARY KEY,
    jkt           text        NOT NULL,
    hostname      text        NOT NULL,
    token_version integer     NOT NULL,
    purged_by     text        NOT NULL,
    purged_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX device_purges_jkt_idx ON device_purges (jkt);

-- Refresh tokens, stored hashed. Each use rotates to a new token of the
-- same family; presenting a used one revokes the family (theft).
CREATE TABLE refresh_tokens (
    token_hash  bytea       PRIMARY KEY,
    device_guid text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    family_id   text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    revoked_at  timestamptz
);
CREATE INDEX refresh_tokens_device_idx ON refresh_tokens (device_guid);
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);

-- Heavy inventory, one row per device; each collection is replaced whole
-- when the agent reports it (a missing collection leaves its column).
CREATE TABLE device_inventory (
    device_guid  text        PRIMARY KEY REFERENCES devices (guid) ON DELETE CASCADE,
    hash         text        NOT NULL DEFAULT '',
    hardware     jsonb,
    os           jsonb,
    network      jsonb,
    sessions     jsonb,
    uptime       jsonb,
    software     jsonb,
    services     jsonb,
    processes    jsonb,
    services_hash text       NOT NULL DEFAULT '',
    -- SHA-256 of each collection as last stored (hardware, os, network,
    -- sessions, uptime, software, services, processes, patches), so a
    -- details post that changes nothing is recognised without reading
    -- the stored collections back.
    part_hashes  jsonb       NOT NULL DEFAULT '{}',
    collected_at timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Installed software in the form filters match on (lower-cased name).
CREATE TABLE device_software (
    device_guid text NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    name_key    text NOT NULL,
    name        text NOT NULL,
    version     text NOT NULL DEFAULT '',
    publisher   text NOT NULL DEFAULT '',
    PRIMARY KEY (device_guid, name_key, version)
);
CREATE INDEX device_software_name_idx ON device_software (name_key);

-- Normalized patch rows, de-duplicated by patch_key (KB first).
CREATE TABLE device_patches (
    device_guid       text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    patch_key         text        NOT NULL,
    kb                text        NOT NULL DEFAULT '',
    title             text        NOT NULL,
    update_id         text        NOT NULL DEFAULT '',
    revision          integer     NOT NULL DEFAULT 0,
    state             text        NOT NULL CHECK (state IN ('pending', 'installed')),
    source            text        NOT NULL,
    package           text        NOT NULL DEFAULT '',
    installed_version text        NOT NULL DEFAULT '',
    candidate_version text        NOT NULL DEFAULT '',
    severity          text        NOT NULL DEFAULT '',
    installed_at      timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_guid, patch_key)
);

-- Agent role health rows (system:<role>), including the startup timeline
-- row system:system_heartbeat.
CREATE TABLE device_roles (
    device_guid       text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    key               text        NOT NULL,
    desired           text        NOT NULL DEFAULT '',
    observed          text        NOT NULL DEFAULT '',
    last_checked_at   timestamptz,
    last_healthy_at   timestamptz,
    last_error        text        NOT NULL DEFAULT '',
    recovery_attempts integer     NOT NULL DEFAULT 0,
    context           jsonb       NOT NULL DEFAULT '{}',
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_guid, key)
);

-- Device activity history: trust actions, enrollment and (later) jobs.
-- Rows outlive a purge only through their hostname; the GUID link goes.
CREATE TABLE device_activity (
    id          bigserial   PRIMARY KEY,
    device_guid text        REFERENCES devices (guid) ON DELETE SET NULL,
    hostname    text        NOT NULL,
    site_id     bigint      REFERENCES sites (id) ON DELETE SET NULL,
    kind        text        NOT NULL,
    summary     text        NOT NULL,
    actor       text        NOT NULL DEFAULT '',
    status      text        NOT NULL DEFAULT 'completed',
    metadata    jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX device_activity_host_idx ON device_activity (lower(hostname), created_at DESC);

-- +goose Down
DROP TABLE device_activity;
DROP TABLE device_roles;
DROP TABLE device_patches;
DROP TABLE device_software;
DROP TABLE device_inventory;
DROP TABLE refresh_tokens;
DROP TABLE device_purges;
DROP TABLE device_approvals;
DROP INDEX devices_jkt_idx;
DROP INDEX devices_hostname_idx;
ALTER TABLE devices
    DROP COLUMN agent_id, DROP COLUMN description, DROP COLUMN operating_system,
    DROP COLUMN public_key, DROP COLUMN jkt, DROP COLUMN fingerprint,
    DROP COLUMN trust_state, DROP COLUMN token_version, DROP COLUMN agent_version,
    DROP COLUMN boot_id, DROP COLUMN last_seen, DROP COLUMN metrics,
    DROP COLUMN last_status, DROP COLUMN socket_replica, DROP COLUMN socket_seen_at,
    DROP COLUMN helper_contexts, DROP COLUMN enrolled_at, DROP COLUMN updated_at;
DROP TABLE enrollment_codes;
ALTER TABLE sites DROP COLUMN auto_approve_until;
