-- Ansible playbook runs (issue 27 item 2): the agent runs the playbook
-- with ansible-playbook against localhost and answers its PLAY RECAP
-- (ok, changed, unreachable, failed, skipped, rescued, ignored, and the
-- ansible-core version); the result keeps it. NULL for script results and
-- playbook runs that ended before their recap.

-- +goose Up
ALTER TABLE job_run_results ADD COLUMN ansible_recap jsonb;

-- +goose Down
ALTER TABLE job_run_results DROP COLUMN ansible_recap;
