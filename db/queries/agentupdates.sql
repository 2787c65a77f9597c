-- Agent updates (internal/agentupdates): operations, their bounded event
-- timelines and their agent_maintenance job history.

-- name: AgentMaintenanceJobEnsure :one
-- The system job that holds every agent-maintenance run.
INSERT INTO scheduled_jobs (name, kind, system, enabled, schedule, created_by, updated_by)
VALUES ('Agent maintenance', 'agent_maintenance', true, true, '{"type": "manual"}', 'system', 'system')
ON CONFLICT (kind) WHERE system DO UPDATE SET kind = EXCLUDED.kind
RETURNING id;

-- name: AgentUpdateDeviceInScope :one
-- The device with its reported build and what picks its artifact.
SELECT d.guid, d.hostname, d.site_id, d.agent_build_id, d.operating_system,
       COALESCE(i.os->>'family', '')::text AS os_family,
       COALESCE(i.os->>'arch', '')::text AS os_arch
FROM devices d LEFT JOIN device_inventory i ON i.device_guid = d.guid
WHERE d.guid = @guid AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]));

-- name: AgentUpdateRunInsert :exec
INSERT INTO job_runs (id, scheduled_job_id, kind, trigger, status, requested_by, target_count, scheduled_for, started_at)
VALUES (@id, @scheduled_job_id, 'agent_maintenance', @trigger, 'running', @requested_by, @target_count,
    sqlc.narg(scheduled_for), now());

-- name: AgentUpdateResultInsert :exec
INSERT INTO job_run_results (run_id, device_guid, hostname, site_id, status, operation_id)
VALUES (@run_id, @device_guid, @hostname, sqlc.narg(site_id), 'pending', @operation_id);

-- name: AgentUpdateResultSet :exec
UPDATE job_run_results SET
    status = @status,
    error_code = @error_code,
    error_message = @error_message,
    activity_id = COALESCE(sqlc.narg(activity_id), activity_id),
    started_at = COALESCE(started_at, now()),
    finished_at = CASE WHEN @status IN ('pending', 'running') THEN NULL ELSE now() END
WHERE run_id = @run_id AND device_guid = @device_guid;

-- name: AgentUpdateResultStart :exec
-- A pending result starts; one that already has its outcome keeps it (the
-- agent can answer before the workflow records the start).
UPDATE job_run_results SET
    status = CASE WHEN status = 'pending' THEN 'running' ELSE status END,
    activity_id = @activity_id,
    started_at = COALESCE(started_at, now())
WHERE run_id = @run_id AND device_guid = @device_guid;

-- name: AgentUpdateRunSettle :exec
-- A run is running while any result is; then succeeded when all did (or
-- were skipped: a device already updating is reported, not failed), else
-- failed.
UPDATE job_runs r SET
    status = CASE
        WHEN EXISTS (SELECT 1 FROM job_run_results x WHERE x.run_id = r.id AND x.status IN ('pending', 'running')) THEN 'running'
        WHEN NOT EXISTS (SELECT 1 FROM job_run_results x WHERE x.run_id = r.id AND x.status NOT IN ('succeeded', 'skipped')) THEN 'succeeded'
        ELSE 'failed' END,
    finished_at = CASE
        WHEN EXISTS (SELECT 1 FROM job_run_results x WHERE x.run_id = r.id AND x.status IN ('pending', 'running')) THEN NULL
        ELSE now() END
WHERE r.id = @id;

-- name: AgentUpdateOperationInsert :one
INSERT INTO agent_update_operations (id, device_guid, hostname, site_id, status, reason, force, requested_by,
    from_build_id, to_build_id, artifact_id, run_id, scheduled_job_id, started_at)
VALUES (@id, @device_guid, @hostname, sqlc.narg(site_id), @status, @reason, @force, @requested_by,
    @from_build_id, @to_build_id, @artifact_id, sqlc.narg(run_id), sqlc.narg(scheduled_job_id),
    CASE WHEN @status = 'running' THEN now() END)
RETURNING *;

-- name: AgentUpdateOperationGet :one
SELECT * FROM agent_update_operations WHERE id = @id;

-- name: AgentUpdateOperationGetForDevice :one
SELECT * FROM agent_update_operations WHERE id = @id AND device_guid = @device_guid;

-- name: AgentUpdateOperationStart :one
UPDATE agent_update_operations SET
    status = 'running',
    started_at = COALESCE(started_at, now()),
    activity_id = COALESCE(sqlc.narg(activity_id), activity_id)
WHERE id = @id AND status IN ('queued', 'running')
RETURNING *;

-- name: AgentUpdateOperationPhase :one
UPDATE agent_update_operations SET
    last_phase = @phase,
    status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
    started_at = COALESCE(started_at, now())
WHERE id = @id
RETURNING *;

-- name: AgentUpdateOperationFinish :one
-- Ends an active operation; an operation already ended is left alone (no
-- row), so the first outcome wins.
UPDATE agent_update_operations SET
    status = @status,
    failure_summary = @failure_summary,
    last_phase = CASE WHEN @phase::text <> '' THEN @phase::text ELSE last_phase END,
    finished_at = now()
WHERE id = @id AND status IN ('queued', 'running')
RETURNING *;

-- name: AgentUpdateEventsInsert :exec
INSERT INTO agent_update_events (operation_id, phase, percent, message, captured_at)
SELECT @operation_id::text, unnest(@phases::text[]), unnest(@percents::int[]), unnest(@messages::text[]),
    unnest(@captured::timestamptz[]);

-- name: AgentUpdateEventsTrim :exec
-- Keeps the newest 100 events of an operation.
DELETE FROM agent_update_events e
WHERE e.operation_id = @operation_id
  AND e.seq < (SELECT min(k.seq) FROM (
        SELECT x.seq FROM agent_update_events x WHERE x.operation_id = @operation_id ORDER BY x.seq DESC LIMIT 100) k);

-- name: AgentUpdateEventsList :many
SELECT * FROM agent_update_events WHERE operation_id = ANY(@operation_ids::text[]) ORDER BY operation_id, seq;

-- name: AgentUpdateOperationsByDevice :many
SELECT * FROM agent_update_operations
WHERE device_guid = @device_guid AND (@operation_id::text = '' OR id = @operation_id::text)
ORDER BY created_at DESC, id
LIMIT @max_rows::int;

-- name: AgentUpdateOperationActive :one
SELECT * FROM agent_update_operations WHERE device_guid = @device_guid AND status IN ('queued', 'running');
