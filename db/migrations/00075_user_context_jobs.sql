-- +goose Up

-- User-context jobs (issue 27 item 3, SPEC agent behaviour 12): a script
-- runs as the agent's privileged account (system, the default) or in the
-- signed-in user's session (current_user, Windows agents advertising the
-- currentuser helper context). An assembly version carries its choice;
-- a run records what it ran with.
ALTER TABLE assembly_versions ADD COLUMN run_as text NOT NULL DEFAULT 'system'
    CHECK (run_as IN ('system', 'current_user'));
ALTER TABLE job_runs ADD COLUMN run_as text NOT NULL DEFAULT 'system'
    CHECK (run_as IN ('system', 'current_user'));

-- +goose Down
ALTER TABLE job_runs DROP COLUMN run_as;
ALTER TABLE assembly_versions DROP COLUMN run_as;
