-- +goose Up

-- Scheduled jobs and workflows (issue 11, H2). The shared tables are in
-- 00009_automation.sql; this adds what jobs and workflows need beside them.

-- Multi-step automation: each step runs an assembly as a job run, with a
-- condition on the previous step's result.
CREATE TABLE automation_workflows (
    id          bigserial   PRIMARY KEY,
    name        text        NOT NULL CHECK (name <> '' AND length(name) <= 200),
    description text        NOT NULL DEFAULT '',
    -- [{"id", "name", "assembly_id", "parameters", "condition", "timeout_seconds"}]
    steps       jsonb       NOT NULL DEFAULT '[]',
    created_by  text        NOT NULL DEFAULT '',
    updated_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX automation_workflows_name_idx ON automation_workflows (lower(name));

-- One execution of a workflow: its steps' job runs, in order.
CREATE TABLE automation_workflow_runs (
    id               text        PRIMARY KEY,
    workflow_id      bigint      NOT NULL REFERENCES automation_workflows (id) ON DELETE CASCADE,
    scheduled_job_id bigint      REFERENCES scheduled_jobs (id) ON DELETE CASCADE,
    -- pending | running | succeeded | failed | canceled
    status           text        NOT NULL DEFAULT 'pending',
    -- [{"step_id", "status", "run_id"}]
    steps            jsonb       NOT NULL DEFAULT '[]',
    device_guids     text[]      NOT NULL DEFAULT '{}',
    requested_by     text        NOT NULL DEFAULT '',
    scheduled_for    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
CREATE INDEX automation_workflow_runs_workflow_idx ON automation_workflow_runs (workflow_id, created_at DESC);
CREATE UNIQUE INDEX automation_workflow_runs_fire_idx ON automation_workflow_runs (scheduled_job_id, scheduled_for)
    WHERE scheduled_for IS NOT NULL;

ALTER TABLE scheduled_jobs
    ADD COLUMN workflow_id bigint REFERENCES automation_workflows (id) ON DELETE RESTRICT,
    -- Values for the assembly's parameters, by name.
    ADD COLUMN parameters  jsonb NOT NULL DEFAULT '{}',
    -- A script job runs the assembly version current when it was last
    -- saved, signed then (proto.Signed, not bound to a run or device), so
    -- it fires while the master cipher is locked after a restart.
    ADD COLUMN assembly_version int,
    ADD COLUMN signed           jsonb;

-- Job runs' activity rows are found by their job (delete a job, clear
-- its history).
CREATE INDEX device_activity_scheduled_job_idx ON device_activity ((metadata->>'scheduled_job_id'))
    WHERE metadata ? 'scheduled_job_id';

-- Site-worker scheduled lane: each active scheduled job run, workflow
-- run or agent-maintenance item holds one slot of its site while it
-- runs. A slot is a lease: a holder that died without releasing frees
-- it when the lease ends.
CREATE TABLE site_work_slots (
    site_id     bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    holder      text        NOT NULL,
    -- scheduled_job | workflow | agent_maintenance
    kind        text        NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (site_id, holder)
);

-- +goose Down
DROP TABLE site_work_slots;
DROP INDEX device_activity_scheduled_job_idx;
ALTER TABLE scheduled_jobs DROP COLUMN signed, DROP COLUMN assembly_version, DROP COLUMN parameters, DROP COLUMN workflow_id;
DROP TABLE automation_workflow_runs;
DROP TABLE automation_workflows;
