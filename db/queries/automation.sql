-- Assemblies: the assembly row holds identity and the current version
-- number; the content of every version is in assembly_versions.

-- name: AssemblyList :many
SELECT a.id, a.name, a.kind, a.language, a.description, a.current_version, a.created_by, a.updated_by,
       a.created_at, a.updated_at, v.parameters, v.timeout_seconds, v.body_sha256,
       (a.bundled_key IS NOT NULL)::boolean AS bundled, a.owner_user_id, a.site_scope, v.run_as
FROM assemblies a JOIN assembly_versions v ON v.assembly_id = a.id AND v.version = a.current_version
WHERE (@kind::text = '' OR a.kind = @kind)
  AND (@q::text = '' OR a.name ILIKE '%' || @q || '%' OR a.description ILIKE '%' || @q || '%')
ORDER BY lower(a.name), a.id;

-- name: AssemblyGet :one
-- An assembly as of a version (its current one when @version is 0).
SELECT a.id, a.name, a.kind, a.description, a.current_version, a.created_by, a.updated_by,
       a.created_at, a.updated_at, v.version, v.language, v.body, v.parameters, v.timeout_seconds, v.body_sha256,
       v.created_by AS version_created_by, v.created_at AS version_created_at,
       (a.bundled_key IS NOT NULL)::boolean AS bundled, a.owner_user_id, a.site_scope, v.run_as
FROM assemblies a JOIN assembly_versions v ON v.assembly_id = a.id
 AND v.version = CASE WHEN @version::int = 0 THEN a.current_version ELSE @version::int END
WHERE a.id = @id;

-- name: AssemblyGetForUpdate :one
SELECT * FROM assemblies WHERE id = @id FOR UPDATE;

-- name: AssemblyInsert :one
INSERT INTO assemblies (name, kind, language, description, created_by, updated_by, owner_user_id, site_scope)
VALUES (@name, @kind, @language, @description, @actor, @actor, sqlc.narg(owner_user_id), sqlc.narg(site_scope)::bigint[])
RETURNING *;

-- name: AssemblyUpdate :exec
UPDATE assemblies
SET name = @name, kind = @kind, language = @language, description = @description,
    current_version = @current_version, updated_by = @actor, updated_at = now()
WHERE id = @id;

-- name: AssemblySetScope :exec
-- The union of the scopes of everyone who saved the assembly (NULL: every
-- site); see 00027_shared_object_scope.sql.
UPDATE assemblies SET site_scope = sqlc.narg(site_scope)::bigint[] WHERE id = @id;

-- name: AssemblyDependantJobs :many
-- Scheduled jobs that run the assembly, with the scope of who saved them.
SELECT id, name, target_scope FROM scheduled_jobs WHERE assembly_id = @id ORDER BY id;

-- name: AssemblyDependantFlows :many
-- Flows (/api/workflows) with a step that runs the assembly.
SELECT id, name, site_scope FROM automation_workflows
WHERE steps @> jsonb_build_array(jsonb_build_object('assembly_id', @id::bigint))
ORDER BY id;

-- name: AssemblyVersionInsert :exec
INSERT INTO assembly_versions (assembly_id, version, language, body, parameters, timeout_seconds, body_sha256, created_by, run_as)
VALUES (@assembly_id, @version, @language, @body, @parameters, @timeout_seconds, @body_sha256, @actor,
        COALESCE(NULLIF(@run_as::text, ''), 'system'));

-- name: AssemblyVersionList :many
SELECT version, language, timeout_seconds, body_sha256, created_by, created_at
FROM assembly_versions WHERE assembly_id = @assembly_id ORDER BY version DESC;

-- name: AssemblyDelete :execrows
DELETE FROM assemblies WHERE id = @id;

-- name: AssemblyInUse :one
-- Whether a scheduled job uses the assembly (deleting it would break the job).
SELECT EXISTS (SELECT 1 FROM scheduled_jobs WHERE assembly_id = @id)::boolean;

-- Job runs.

-- name: JobTargetsByGUID :many
-- Devices by GUID inside the caller's scope, with what decides whether a
-- script can run there (trust, the agent's capabilities) and how (operating
-- system).
SELECT d.guid, d.hostname, d.site_id, s.slug AS site_slug, d.trust_state, d.operating_system, d.capabilities, d.helper_contexts
FROM devices d JOIN sites s ON s.id = d.site_id
WHERE d.guid = ANY(@guids::text[])
  AND (@all_sites::boolean OR d.site_id = ANY(@site_ids::bigint[]));

-- name: JobRunInsert :one
-- A scheduled fire (scheduled_for set) inserts once: a retried or
-- restarted firing gets nothing back and reads the existing run.
INSERT INTO job_runs (id, scheduled_job_id, kind, trigger, assembly_id, assembly_version, language, scheduled_for,
                      requested_by, workflow_id, target_count, body, parameters, timeout_seconds, run_when_online, run_as)
VALUES (@id, sqlc.narg(scheduled_job_id), @kind, @trigger, sqlc.narg(assembly_id), sqlc.narg(assembly_version), @language,
        sqlc.narg(scheduled_for), @requested_by, @workflow_id, @target_count, @body, @parameters, @timeout_seconds, @run_when_online,
        COALESCE(NULLIF(@run_as::text, ''), 'system'))
ON CONFLICT (scheduled_job_id, scheduled_for) WHERE scheduled_for IS NOT NULL DO NOTHING
RETURNING *;

-- name: JobRunDiscard :execrows
-- A run whose workflow never started: nothing ran, so nothing is kept.
DELETE FROM job_runs WHERE id = @id AND status = 'pending' AND started_at IS NULL;

-- name: JobRunGetByFire :one
SELECT * FROM job_runs WHERE scheduled_job_id = @scheduled_job_id AND scheduled_for = @scheduled_for;

-- name: JobRunResultsInsert :exec
INSERT INTO job_run_results (run_id, device_guid, hostname, site_id, status, error_code, error_message, signed, finished_at)
SELECT @run_id, u.guid, u.hostname, u.site_id, u.status, u.error_code, u.error_message, NULLIF(u.signed, '')::jsonb,
       CASE WHEN u.status = 'pending' THEN NULL ELSE now() END
FROM (SELECT unnest(@guids::text[]) AS guid, unnest(@hostnames::text[]) AS hostname, unnest(@site_ids::bigint[]) AS site_id,
             unnest(@statuses::text[]) AS status, unnest(@error_codes::text[]) AS error_code,
             unnest(@error_messages::text[]) AS error_message, unnest(@signed::text[]) AS signed) u;

-- name: JobRunGet :one
SELECT r.*, COALESCE(a.name, '') AS assembly_name
FROM job_runs r LEFT JOIN assemblies a ON a.id = r.assembly_id
WHERE r.id = @id;

-- name: JobRunResultList :many
-- A run's results inside the caller's scope.
SELECT device_guid, hostname, site_id, status, exit_code, stdout, stderr, stdout_truncated, stderr_truncated,
       error_code, error_message, operation_id, duration_ms, started_at, finished_at, ansible_recap
FROM job_run_results
WHERE run_id = @run_id AND (@all_sites::boolean OR site_id = ANY(@site_ids::bigint[]))
ORDER BY hostname, device_guid;

-- name: JobRunPendingBatch :many
-- The next pending results of a run with where to send them.
SELECT r.device_guid, r.hostname, r.site_id, s.slug AS site_slug
FROM job_run_results r JOIN devices d ON d.guid = r.device_guid JOIN sites s ON s.id = d.site_id
WHERE r.run_id = @run_id AND r.status = 'pending' AND r.error_code <> 'queued_offline'
ORDER BY r.device_guid
LIMIT @max_items;

-- name: JobRunResultQueue :execrows
-- An offline device of a run that allows it keeps its work until it asks.
UPDATE job_run_results SET status = 'pending', error_code = 'queued_offline',
    error_message = 'the device was offline; it runs when the agent asks for work'
WHERE run_id = @run_id AND device_guid = @device_guid AND status IN ('pending', 'running');

-- name: JobRunStart :exec
UPDATE job_runs SET status = 'running', started_at = COALESCE(started_at, now())
WHERE id = @id AND status = 'pending';

-- name: JobRunResultDispatch :one
-- The result goes out now: running, with its operation and activity row.
-- Returns the signed payload (a retried dispatch sends the same one).
UPDATE job_run_results
SET status = 'running', started_at = COALESCE(started_at, now()), operation_id = @operation_id,
    activity_id = COALESCE(activity_id, sqlc.narg(activity_id))
WHERE run_id = @run_id AND device_guid = @device_guid AND status IN ('pending', 'running')
RETURNING signed, activity_id;

-- name: JobRunDispatchInfo :one
-- Everything a dispatch needs in one read: the result, its run, and the
-- device's trust, site and socket.
SELECT r.activity_id, r.status, j.run_when_online, j.requested_by, j.language, j.scheduled_job_id,
       COALESCE(a.name, '')::text AS assembly_name, d.hostname, d.site_id, s.slug AS site_slug, d.trust_state,
       (d.socket_replica IS NOT NULL
        AND d.socket_seen_at > now() - make_interval(secs => @fresh_seconds::float8))::boolean AS socket_live
FROM job_run_results r
JOIN job_runs j ON j.id = r.run_id
LEFT JOIN assemblies a ON a.id = j.assembly_id
JOIN devices d ON d.guid = r.device_guid
JOIN sites s ON s.id = d.site_id
WHERE r.run_id = @run_id AND r.device_guid = @device_guid;

-- name: JobRunResultOutput :execrows
-- Live output of a running script (the whole output so far).
UPDATE job_run_results
SET stdout = @stdout, stderr = @stderr, stdout_truncated = @stdout_truncated, stderr_truncated = @stderr_truncated
WHERE run_id = @run_id AND device_guid = @device_guid AND status = 'running';

-- name: JobRunResultFinish :one
-- The outcome. Output the agent posted live is longer than the copy in its
-- reply when that had to be cut for transport; the longer one stays.
-- Returns what the activity row needs.
UPDATE job_run_results r
SET status = @status, exit_code = sqlc.narg(exit_code),
    stdout_truncated = CASE WHEN length(@stdout::text) >= length(r.stdout) THEN @stdout_truncated ELSE r.stdout_truncated END,
    stderr_truncated = CASE WHEN length(@stderr::text) >= length(r.stderr) THEN @stderr_truncated ELSE r.stderr_truncated END,
    stdout = CASE WHEN length(@stdout::text) >= length(r.stdout) THEN @stdout::text ELSE r.stdout END,
    stderr = CASE WHEN length(@stderr::text) >= length(r.stderr) THEN @stderr::text ELSE r.stderr END,
    error_code = @error_code, error_message = @error_message, duration_ms = sqlc.narg(duration_ms),
    ansible_recap = sqlc.narg(ansible_recap),
    started_at = COALESCE(sqlc.narg(started_at), r.started_at, now()), finished_at = COALESCE(sqlc.narg(finished_at), now())
FROM job_runs j LEFT JOIN assemblies a ON a.id = j.assembly_id
WHERE j.id = r.run_id AND r.run_id = @run_id AND r.device_guid = @device_guid AND r.status IN ('pending', 'running')
RETURNING r.activity_id, r.operation_id, j.scheduled_job_id, j.language, COALESCE(a.name, '')::text AS assembly_name;

-- name: JobRunCounts :one
SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
       count(*) FILTER (WHERE status = 'running') AS running,
       count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status = 'timed_out') AS timed_out,
       count(*) FILTER (WHERE status = 'skipped') AS skipped
FROM job_run_results WHERE run_id = @run_id AND (@all_sites::boolean OR site_id = ANY(@site_ids::bigint[]));

-- name: JobRunFinish :exec
-- Closes a run once no result is pending or running.
UPDATE job_runs r
SET status = CASE WHEN NOT EXISTS (SELECT 1 FROM job_run_results x WHERE x.run_id = r.id AND x.status <> 'succeeded')
                  THEN 'succeeded' ELSE 'failed' END,
    started_at = COALESCE(started_at, now()), finished_at = now()
WHERE r.id = @id AND r.status IN ('pending', 'running')
  AND NOT EXISTS (SELECT 1 FROM job_run_results x WHERE x.run_id = r.id AND x.status IN ('pending', 'running'));

-- name: JobRunQueuedForDevice :many
-- Work queued for a device that was offline, handed out once: the results
-- become running until the agent posts them.
UPDATE job_run_results r SET status = 'running', started_at = now(), error_code = '', error_message = ''
FROM job_runs j
WHERE j.id = r.run_id AND r.device_guid = @device_guid AND r.status = 'pending'
  AND r.error_code = 'queued_offline' AND j.run_when_online AND r.signed IS NOT NULL
RETURNING r.run_id, r.signed;

-- name: JobRunAllowsQueue :one
SELECT run_when_online FROM job_runs WHERE id = @id;
