-- +goose Up

-- Watchdog policies (internal/watchdogs, docs/api.md "Watchdogs"). The
-- name, severity, scope and switch are columns; targets, rules, noise
-- controls and actions are the policy document the domain validates.
-- site_ids is the scope: the sites the policy may apply to (NULL: every
-- site, which only an all-sites caller may save or see).
CREATE TABLE watchdogs (
    id          bigserial   PRIMARY KEY,
    name        text        NOT NULL CHECK (btrim(name) <> ''),
    description text        NOT NULL DEFAULT '',
    severity    text        NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    enabled     boolean     NOT NULL DEFAULT true,
    site_ids    bigint[],
    policy      jsonb       NOT NULL,
    -- revision grows with each save, so an evaluation started before a
    -- save does not write what the older policy decided.
    revision    bigint      NOT NULL DEFAULT 1,
    -- evaluated_at is when the evaluator last went through the policy
    -- (NULL: never); the maintenance job evaluates it again an interval on.
    evaluated_at timestamptz,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX watchdogs_name_idx ON watchdogs (lower(name));

-- What the evaluator remembers between evaluations of one watchdog on one
-- device: consecutive matches, memo (since when each rule's raw condition
-- has held, for per-rule windows, and the boot ID last seen, for reboot
-- detection), since when the whole condition has been clear (auto-resolve
-- delay), and the last resolution (cooldown).
CREATE TABLE watchdog_device_state (
    watchdog_id       bigint      NOT NULL REFERENCES watchdogs (id) ON DELETE CASCADE,
    device_guid       text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    consecutive       integer     NOT NULL DEFAULT 0 CHECK (consecutive >= 0),
    memo              jsonb       NOT NULL DEFAULT '{}',
    clear_since       timestamptz,
    last_resolved_at  timestamptz,
    evaluated_at      timestamptz NOT NULL,
    PRIMARY KEY (watchdog_id, device_guid)
);
CREATE INDEX watchdog_device_state_device_idx ON watchdog_device_state (device_guid);

-- Incidents (SPEC "Watchdog incident"). The partial unique index is the
-- guarantee of one active incident per watchdog and device, whatever two
-- evaluators racing each other decide.
CREATE TABLE watchdog_incidents (
    id               bigserial   PRIMARY KEY,
    watchdog_id      bigint      NOT NULL REFERENCES watchdogs (id) ON DELETE CASCADE,
    device_guid      text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    site_id          bigint      NOT NULL,
    severity         text        NOT NULL,
    title            text        NOT NULL,
    state            text        NOT NULL DEFAULT 'Open'
        CHECK (state IN ('Open', 'Acknowledged', 'Suppressed', 'Resolved')),
    sampled          jsonb       NOT NULL DEFAULT '[]',
    -- offline_only: every rule that matched was the offline subject, so
    -- the incident is purged (not resolved) when the device checks in.
    offline_only     boolean     NOT NULL DEFAULT false,
    opened_at        timestamptz NOT NULL DEFAULT now(),
    last_matched_at  timestamptz NOT NULL DEFAULT now(),
    acknowledged_by  text,
    acknowledged_at  timestamptz,
    suppressed_by    text,
    suppressed_at    timestamptz,
    suppress_reason  text,
    resolved_at      timestamptz,
    resolve_reason   text,
    -- outcomes of the policy's actions, one entry per action, appended
    -- once by the incident's workflow.
    outcomes         jsonb       NOT NULL DEFAULT '[]',
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((state = 'Resolved') = (resolved_at IS NOT NULL)),
    CHECK (state <> 'Suppressed' OR btrim(coalesce(suppress_reason, '')) <> '')
);
CREATE UNIQUE INDEX watchdog_incidents_active_idx ON watchdog_incidents (watchdog_id, device_guid)
    WHERE state <> 'Resolved';
CREATE INDEX watchdog_incidents_queue_idx ON watchdog_incidents (state, severity, site_id);
CREATE INDEX watchdog_incidents_device_idx ON watchdog_incidents (device_guid);

-- Device overrides (SPEC "Device watchdog override"): one watchdog muted
-- on one device, with a non-empty reason.
CREATE TABLE watchdog_device_overrides (
    watchdog_id bigint      NOT NULL REFERENCES watchdogs (id) ON DELETE CASCADE,
    device_guid text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    reason      text        NOT NULL CHECK (btrim(reason) <> ''),
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (watchdog_id, device_guid)
);
CREATE INDEX watchdog_device_overrides_device_idx ON watchdog_device_overrides (device_guid);

-- +goose Down
DROP TABLE watchdog_device_overrides;
DROP TABLE watchdog_incidents;
DROP TABLE watchdog_device_state;
DROP TABLE watchdogs;
