-- +goose Up

-- Automation (issue 11): saved content, the jobs that run it, and what each
-- run did on each device. Shared by quick runs, scheduled jobs, workflows
-- and agent maintenance; each capability adds its own tables beside these.

-- Saved automation content. Editing adds a version; runs record the
-- version they ran, so history stays exact after later edits.
CREATE TABLE assemblies (
    id              bigserial   PRIMARY KEY,
    name            text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    kind            text        NOT NULL CHECK (kind IN ('script', 'ansible_playbook', 'workflow')),
    -- bash, sh, python (Linux); powershell, cmd (Windows); '' for non-scripts.
    language        text        NOT NULL DEFAULT '',
    description     text        NOT NULL DEFAULT '',
    current_version int         NOT NULL DEFAULT 1,
    created_by      text        NOT NULL DEFAULT '',
    updated_by      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX assemblies_name_idx ON assemblies (lower(name));

CREATE TABLE assembly_versions (
    assembly_id     bigint      NOT NULL REFERENCES assemblies (id) ON DELETE CASCADE,
    version         int         NOT NULL CHECK (version >= 1),
    language        text        NOT NULL DEFAULT '',
    body            text        NOT NULL,
    -- [{"name", "label", "type": "string"|"number"|"boolean", "default", "required"}]
    parameters      jsonb       NOT NULL DEFAULT '[]',
    timeout_seconds int         NOT NULL DEFAULT 300 CHECK (timeout_seconds BETWEEN 1 AND 86400),
    body_sha256     bytea       NOT NULL,
    created_by      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (assembly_id, version)
);

-- A job: what to run (kind + content), on which targets, when. PostgreSQL
-- is the source of truth; each enabled job with a schedule is mirrored as
-- the Temporal Schedule `scheduled-job:<id>`.
CREATE TABLE scheduled_jobs (
    id              bigserial   PRIMARY KEY,
    name            text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    -- script | agent_maintenance | workflow | patch_install
    kind            text        NOT NULL,
    assembly_id     bigint      REFERENCES assemblies (id) ON DELETE RESTRICT,
    -- {"devices": [guid...], "sites": [site_id...], "filters": [filter_id...]}
    targets         jsonb       NOT NULL DEFAULT '{}',
    -- {"type": "once", "at"} | {"type": "cron", "expression", "timezone"} |
    -- {"type": "interval", "every_seconds"} | {"type": "manual"}
    schedule        jsonb       NOT NULL DEFAULT '{"type": "manual"}',
    -- {"run_when_online", "timeout_seconds", "stop_on_first_failure", "parameters"}
    options         jsonb       NOT NULL DEFAULT '{}',
    enabled         boolean     NOT NULL DEFAULT true,
    -- System-made history holders (agent maintenance) are not operator jobs.
    system          boolean     NOT NULL DEFAULT false,
    created_by      text        NOT NULL DEFAULT '',
    updated_by      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- One execution of a job or of a quick run over its resolved targets.
CREATE TABLE job_runs (
    id               text        PRIMARY KEY,
    scheduled_job_id bigint      REFERENCES scheduled_jobs (id) ON DELETE CASCADE,
    -- quick_run | scheduled_job | agent_maintenance | workflow
    kind             text        NOT NULL,
    -- manual | schedule | rerun | hourly
    trigger          text        NOT NULL DEFAULT 'manual',
    assembly_id      bigint      REFERENCES assemblies (id) ON DELETE SET NULL,
    assembly_version int,
    language         text        NOT NULL DEFAULT '',
    -- pending | running | succeeded | failed | canceled
    status           text        NOT NULL DEFAULT 'pending',
    -- The fire time a Temporal Schedule gave the run: one run per fire,
    -- however often the firing workflow is retried or restarted.
    scheduled_for    timestamptz,
    requested_by     text        NOT NULL DEFAULT '',
    workflow_id      text        NOT NULL DEFAULT '',
    target_count     int         NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
CREATE UNIQUE INDEX job_runs_fire_idx ON job_runs (scheduled_job_id, scheduled_for)
    WHERE scheduled_for IS NOT NULL;
CREATE INDEX job_runs_job_idx ON job_runs (scheduled_job_id, created_at DESC);

-- What one run did on one device.
CREATE TABLE job_run_results (
    run_id           text        NOT NULL REFERENCES job_runs (id) ON DELETE CASCADE,
    device_guid      text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    hostname         text        NOT NULL,
    site_id          bigint,
    -- pending | running | succeeded | failed | timed_out | skipped
    status           text        NOT NULL DEFAULT 'pending',
    exit_code        int,
    stdout           text        NOT NULL DEFAULT '',
    stderr           text        NOT NULL DEFAULT '',
    stdout_truncated boolean     NOT NULL DEFAULT false,
    stderr_truncated boolean     NOT NULL DEFAULT false,
    error_code       text        NOT NULL DEFAULT '',
    error_message    text        NOT NULL DEFAULT '',
    operation_id     text        NOT NULL DEFAULT '',
    activity_id      bigint,
    started_at       timestamptz,
    finished_at      timestamptz,
    PRIMARY KEY (run_id, device_guid)
);
CREATE INDEX job_run_results_device_idx ON job_run_results (device_guid);

-- +goose Down
DROP TABLE job_run_results;
DROP TABLE job_runs;
DROP TABLE scheduled_jobs;
DROP TABLE assembly_versions;
DROP TABLE assemblies;
