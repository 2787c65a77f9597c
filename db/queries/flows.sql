-- Multi-step automation workflows and their runs.

-- name: AutomationWorkflowInsert :one
INSERT INTO automation_workflows (name, description, steps, created_by, updated_by, owner_user_id, site_scope)
VALUES (@name, @description, @steps, @actor, @actor, sqlc.narg(owner_user_id), sqlc.narg(site_scope)::bigint[])
RETURNING *;

-- name: AutomationWorkflowUpdate :one
UPDATE automation_workflows
SET name = @name, description = @description, steps = @steps, updated_by = @actor, updated_at = now(),
    site_scope = sqlc.narg(site_scope)::bigint[]
WHERE id = @id
RETURNING *;

-- name: AutomationWorkflowGetForUpdate :one
SELECT * FROM automation_workflows WHERE id = @id FOR UPDATE;

-- name: AutomationWorkflowDependantJobs :many
-- Scheduled jobs that run the flow, with the scope of who saved them.
SELECT id, name, target_scope FROM scheduled_jobs WHERE workflow_id = @workflow_id ORDER BY id;

-- name: AutomationWorkflowGet :one
SELECT * FROM automation_workflows WHERE id = @id;

-- name: AutomationWorkflowList :many
SELECT * FROM automation_workflows ORDER BY lower(name), id;

-- name: AutomationWorkflowDelete :execrows
DELETE FROM automation_workflows WHERE id = @id;

-- name: AutomationWorkflowUsedByJob :one
SELECT EXISTS (SELECT 1 FROM scheduled_jobs WHERE workflow_id = @workflow_id)::boolean;

-- name: AutomationWorkflowRunInsert :one
-- Idempotent per schedule fire (automation_workflow_runs_fire_idx): a
-- retried or restarted fire gets the run it already made.
INSERT INTO automation_workflow_runs (id, workflow_id, scheduled_job_id, status, steps, device_guids, requested_by,
                                      scheduled_for, input, webhook_id)
VALUES (@id, @workflow_id, sqlc.narg(scheduled_job_id), 'pending', @steps, @device_guids, @requested_by,
        sqlc.narg(scheduled_for), sqlc.narg(input), sqlc.narg(webhook_id))
ON CONFLICT (scheduled_job_id, scheduled_for) WHERE scheduled_for IS NOT NULL DO UPDATE SET id = automation_workflow_runs.id
RETURNING *;

-- name: AutomationWorkflowRunGet :one
SELECT * FROM automation_workflow_runs WHERE id = @id;

-- name: AutomationWorkflowRunList :many
SELECT * FROM automation_workflow_runs WHERE workflow_id = @workflow_id
ORDER BY created_at DESC, id DESC LIMIT @max_rows::int;

-- name: AutomationWorkflowRunUpdate :exec
UPDATE automation_workflow_runs
SET status = @status, steps = @steps,
    finished_at = CASE WHEN @status IN ('succeeded', 'failed', 'canceled') THEN now() ELSE NULL END
WHERE id = @id;

-- name: AutomationWorkflowWebhookInsert :one
INSERT INTO automation_workflow_webhooks (id, workflow_id, name, device_guids, rate_limit_per_minute, secret_sealed,
                                          site_scope, created_by)
VALUES (@id, @workflow_id, @name, @device_guids, @rate_limit_per_minute, @secret_sealed,
        sqlc.narg(site_scope)::bigint[], @created_by)
RETURNING *;

-- name: AutomationWorkflowWebhookGet :one
SELECT * FROM automation_workflow_webhooks WHERE id = @id;

-- name: AutomationWorkflowWebhookList :many
SELECT * FROM automation_workflow_webhooks WHERE workflow_id = @workflow_id ORDER BY created_at, id;

-- name: AutomationWorkflowWebhookListAll :many
SELECT * FROM automation_workflow_webhooks ORDER BY id;

-- name: AutomationWorkflowWebhookRotate :one
UPDATE automation_workflow_webhooks SET secret_sealed = @secret_sealed, rotated_at = now()
WHERE id = @id AND workflow_id = @workflow_id
RETURNING *;

-- name: AutomationWorkflowWebhookSealedUpdate :exec
UPDATE automation_workflow_webhooks SET secret_sealed = @secret_sealed WHERE id = @id;

-- name: AutomationWorkflowWebhookTriggered :exec
UPDATE automation_workflow_webhooks SET last_triggered_at = now() WHERE id = @id;

-- name: AutomationWorkflowWebhookDelete :execrows
DELETE FROM automation_workflow_webhooks WHERE id = @id AND workflow_id = @workflow_id;
