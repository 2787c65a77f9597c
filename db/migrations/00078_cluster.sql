-- +goose Up

-- The cluster of issue 26 (docs/architecture.md "Cluster model"): the
-- Engine processes of one deployment (`cairn serve` replicas and
-- standalone `cairn worker`s), each refreshing its own row while it runs.
CREATE TABLE cluster_members (
    member_id    text        PRIMARY KEY,
    role         text        NOT NULL CHECK (role IN ('engine', 'worker')),
    name         text        NOT NULL,
    version      text        NOT NULL,
    sites        text[]      NOT NULL DEFAULT '{}',
    url          text        NOT NULL DEFAULT '',
    admission_id text,
    started_at   timestamptz NOT NULL,
    seen_at      timestamptz NOT NULL DEFAULT now()
);

-- One-time join codes an administrator issues for a new process; only
-- their SHA-256 is kept.
CREATE TABLE cluster_join_codes (
    id         text        PRIMARY KEY,
    code_hash  bytea       NOT NULL UNIQUE,
    role       text        NOT NULL CHECK (role IN ('engine', 'worker')),
    created_by text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

-- A process's request to join, waiting on an administrator (workflow
-- cluster-admission:<id>). token_hash is the SHA-256 of the joiner's
-- channel token; public_key its X25519 key, which the approval's handoff
-- (an Internal key and the join configuration) is sealed to; the box is
-- dropped once the joiner has read it.
CREATE TABLE cluster_admissions (
    id              text        PRIMARY KEY,
    join_code_id    text        NOT NULL REFERENCES cluster_join_codes (id) ON DELETE CASCADE,
    role            text        NOT NULL CHECK (role IN ('engine', 'worker')),
    name            text        NOT NULL,
    sites           text[]      NOT NULL DEFAULT '{}',
    version         text        NOT NULL,
    public_key      bytea       NOT NULL,
    token_hash      bytea       NOT NULL,
    state           text        NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'approved', 'cancelled', 'expired')),
    requested_at    timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    decided_at      timestamptz,
    decided_by      text,
    internal_key_id text,
    handoff_box     bytea,
    delivered_at    timestamptz
);
CREATE INDEX cluster_admissions_state_idx ON cluster_admissions (state, requested_at);

-- What happened in the cluster, newest last: join requests, decisions,
-- handoffs.
CREATE TABLE cluster_events (
    id           bigserial   PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    kind         text        NOT NULL,
    admission_id text,
    actor        text        NOT NULL DEFAULT '',
    message      text        NOT NULL
);
CREATE INDEX cluster_events_admission_idx ON cluster_events (admission_id, id);

-- +goose Down
DROP TABLE cluster_events;
DROP TABLE cluster_admissions;
DROP TABLE cluster_join_codes;
DROP TABLE cluster_members;
