-- +goose Up

-- Agent updates (issue 11, docs/api.md "Agent updates"): one row per
-- update of one device's agent, with its bounded event timeline. Each is
-- recorded as agent_maintenance scheduled-job history too (a job_runs row
-- and a job_run_results row per device under the system job below).
CREATE TABLE agent_update_operations (
    id               text        PRIMARY KEY,
    device_guid      text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    hostname         text        NOT NULL,
    site_id          bigint,
    -- queued | running | succeeded | failed | rolled_back | timed_out
    status           text        NOT NULL DEFAULT 'queued',
    -- operator | hourly
    reason           text        NOT NULL DEFAULT 'operator',
    force            boolean     NOT NULL DEFAULT false,
    requested_by     text        NOT NULL DEFAULT '',
    from_build_id    text        NOT NULL DEFAULT '',
    to_build_id      text        NOT NULL DEFAULT '',
    artifact_id      text        NOT NULL DEFAULT '',
    run_id           text        REFERENCES job_runs (id) ON DELETE SET NULL,
    scheduled_job_id bigint      REFERENCES scheduled_jobs (id) ON DELETE SET NULL,
    activity_id      bigint,
    last_phase       text        NOT NULL DEFAULT '',
    failure_summary  text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
-- At most one active update per device: a second request is
-- update_in_progress, decided by this index rather than a read.
CREATE UNIQUE INDEX agent_update_operations_active_idx ON agent_update_operations (device_guid)
    WHERE status IN ('queued', 'running');
CREATE INDEX agent_update_operations_device_idx ON agent_update_operations (device_guid, created_at DESC);

-- The newest 100 events of each operation.
CREATE TABLE agent_update_events (
    operation_id text        NOT NULL REFERENCES agent_update_operations (id) ON DELETE CASCADE,
    seq          bigserial,
    phase        text        NOT NULL,
    percent      int         NOT NULL DEFAULT 0 CHECK (percent BETWEEN 0 AND 100),
    message      text        NOT NULL DEFAULT '',
    captured_at  timestamptz NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, seq)
);

-- One system job per kind holds the history of work no operator job owns
-- (agent maintenance).
CREATE UNIQUE INDEX scheduled_jobs_system_kind_idx ON scheduled_jobs (kind) WHERE system;

-- +goose Down
DROP INDEX scheduled_jobs_system_kind_idx;
DROP TABLE agent_update_events;
DROP TABLE agent_update_operations;
