-- Scheduled jobs (operator jobs; system history holders are hidden).

-- name: ScheduledJobInsert :one
INSERT INTO scheduled_jobs (name, kind, assembly_id, workflow_id, parameters, targets, schedule, options, enabled,
                            assembly_version, signed, target_scope, created_by, updated_by)
VALUES (@name, @kind, sqlc.narg(assembly_id), sqlc.narg(workflow_id), @parameters, @targets, @schedule, @options,
        @enabled, sqlc.narg(assembly_version), sqlc.narg(signed), sqlc.narg(target_scope)::bigint[], @actor, @actor)
RETURNING *;

-- name: ScheduledJobUpdate :one
UPDATE scheduled_jobs
SET name = @name, kind = @kind, assembly_id = sqlc.narg(assembly_id), workflow_id = sqlc.narg(workflow_id),
    parameters = @parameters, targets = @targets, schedule = @schedule, options = @options, enabled = @enabled,
    assembly_version = sqlc.narg(assembly_version), signed = sqlc.narg(signed),
    target_scope = sqlc.narg(target_scope)::bigint[], updated_by = @actor, updated_at = now()
WHERE id = @id AND NOT system
RETURNING *;

-- name: ScheduledJobGet :one
SELECT * FROM scheduled_jobs WHERE id = @id AND NOT system;

-- name: ScheduledJobList :many
SELECT * FROM scheduled_jobs WHERE NOT system ORDER BY lower(name), id;

-- name: ScheduledJobSetEnabled :one
UPDATE scheduled_jobs SET enabled = @enabled, updated_by = @actor, updated_at = now()
WHERE id = @id AND NOT system
RETURNING *;

-- name: ScheduledJobDelete :execrows
DELETE FROM scheduled_jobs WHERE id = @id AND NOT system;

-- name: ScheduledJobNames :many
SELECT id, name FROM scheduled_jobs WHERE id = ANY(@ids::bigint[]);

-- name: ScheduledJobLastRuns :many
-- The newest run of each listed job.
SELECT DISTINCT ON (scheduled_job_id) scheduled_job_id::bigint AS scheduled_job_id, id, status, started_at, finished_at
FROM job_runs
WHERE scheduled_job_id = ANY(@ids::bigint[])
ORDER BY scheduled_job_id, created_at DESC, id DESC;

-- name: ScheduledJobActivityDelete :execrows
-- The activity rows a job's runs left (SPEC "Operation to event links").
DELETE FROM device_activity
WHERE metadata ? 'scheduled_job_id' AND metadata->>'scheduled_job_id' = (@id::bigint)::text;

-- name: ScheduledJobRunsDelete :execrows
DELETE FROM job_runs WHERE scheduled_job_id = @id::bigint;

-- name: ScheduledJobWorkflowRunsDelete :execrows
DELETE FROM automation_workflow_runs WHERE scheduled_job_id = @id::bigint;

-- name: ScheduledJobTargetsRemoveDevice :execrows
-- A purge removes the device from every job that named it.
UPDATE scheduled_jobs
SET targets = jsonb_set(targets, '{devices}', COALESCE(
        (SELECT jsonb_agg(e) FROM jsonb_array_elements(targets->'devices') e WHERE e <> to_jsonb(@guid::text)),
        '[]'::jsonb)),
    updated_at = now()
WHERE jsonb_typeof(targets->'devices') = 'array' AND targets->'devices' ? @guid::text;

-- name: ScheduledJobTargetDevices :many
-- What a job's targets resolve to now: the listed devices and every
-- device of the listed sites, with trust state for the caller to check.
SELECT d.guid, d.hostname, d.site_id, s.slug AS site_slug, d.trust_state
FROM devices d
JOIN sites s ON s.id = d.site_id
WHERE (d.guid = ANY(@guids::text[]) OR d.site_id = ANY(@site_ids::bigint[]))
  AND (@all_sites::bool OR d.site_id = ANY(@scope_site_ids::bigint[]))
ORDER BY d.site_id, lower(d.hostname);

-- name: ScheduledJobFiltersClear :exec
DELETE FROM scheduled_job_filters WHERE scheduled_job_id = @scheduled_job_id;

-- name: ScheduledJobFiltersAdd :exec
INSERT INTO scheduled_job_filters (scheduled_job_id, filter_id)
SELECT @scheduled_job_id, unnest(@filter_ids::bigint[])
ON CONFLICT DO NOTHING;

-- name: ScheduledJobsUsingFilter :many
-- The jobs that target a saved filter (its delete answers filter_in_use).
SELECT j.id, j.name
FROM scheduled_job_filters f
JOIN scheduled_jobs j ON j.id = f.scheduled_job_id
WHERE f.filter_id = @filter_id
ORDER BY lower(j.name), j.id;

-- name: DeviceFilterIDsExisting :many
SELECT id FROM device_filters WHERE id = ANY(@ids::bigint[]);

-- name: DeviceSitesByGUIDs :many
SELECT guid, site_id FROM devices WHERE guid = ANY(@guids::text[]);

-- name: SiteIDsExisting :many
SELECT id FROM sites WHERE id = ANY(@ids::bigint[]);

-- Runs of a job and their results.

-- name: ScheduledJobRunList :many
SELECT r.*, j.name AS scheduled_job_name, a.name AS assembly_name,
       count(x.device_guid) FILTER (WHERE x.status = 'pending')::int   AS n_pending,
       count(x.device_guid) FILTER (WHERE x.status = 'running')::int   AS n_running,
       count(x.device_guid) FILTER (WHERE x.status = 'succeeded')::int AS n_succeeded,
       count(x.device_guid) FILTER (WHERE x.status = 'failed')::int    AS n_failed,
       count(x.device_guid) FILTER (WHERE x.status = 'timed_out')::int AS n_timed_out,
       count(x.device_guid) FILTER (WHERE x.status = 'skipped')::int   AS n_skipped
FROM job_runs r
LEFT JOIN scheduled_jobs j ON j.id = r.scheduled_job_id
LEFT JOIN assemblies a ON a.id = r.assembly_id
LEFT JOIN job_run_results x ON x.run_id = r.id
WHERE r.scheduled_job_id = @scheduled_job_id
GROUP BY r.id, j.name, a.name
ORDER BY r.created_at DESC, r.id DESC
LIMIT @max_rows::int;

-- name: ScheduledJobRunGet :one
SELECT r.*, j.name AS scheduled_job_name, a.name AS assembly_name
FROM job_runs r
LEFT JOIN scheduled_jobs j ON j.id = r.scheduled_job_id
LEFT JOIN assemblies a ON a.id = r.assembly_id
WHERE r.id = @id;

-- name: ScheduledJobDeviceRuns :many
-- A device's runs, newest first, inside scope.
SELECT x.run_id, r.scheduled_job_id, j.name AS scheduled_job_name, r.kind, x.status, x.exit_code,
       x.started_at, x.finished_at
FROM job_run_results x
JOIN job_runs r ON r.id = x.run_id
JOIN devices d ON d.guid = x.device_guid
LEFT JOIN scheduled_jobs j ON j.id = r.scheduled_job_id
WHERE x.device_guid = @guid
  AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
ORDER BY r.created_at DESC, r.id DESC
LIMIT @max_rows::int;

-- Site-worker scheduled lane slots.

-- name: SiteSlotLockSite :one
SELECT id FROM sites WHERE id = @id FOR UPDATE;

-- name: SiteSlotDeleteExpired :exec
DELETE FROM site_work_slots WHERE site_id = @site_id AND expires_at <= now();

-- name: SiteSlotHeld :one
SELECT EXISTS (SELECT 1 FROM site_work_slots WHERE site_id = @site_id AND holder = @holder)::boolean;

-- name: SiteSlotCount :one
SELECT count(*)::int FROM site_work_slots WHERE site_id = @site_id;

-- name: SiteSlotInsert :exec
INSERT INTO site_work_slots (site_id, holder, kind, expires_at)
VALUES (@site_id, @holder, @kind, now() + make_interval(secs => @lease_seconds::float8))
ON CONFLICT (site_id, holder) DO UPDATE SET expires_at = EXCLUDED.expires_at;

-- name: SiteSlotRelease :exec
DELETE FROM site_work_slots WHERE holder = @holder;

-- name: SiteSlotCounts :many
SELECT s.id AS site_id, s.slug,
       (SELECT count(*) FROM site_work_slots w WHERE w.site_id = s.id AND w.expires_at > now())::int AS active_items
FROM sites s ORDER BY s.id;

-- name: ScheduledJobAssembly :one
SELECT id, name, kind FROM assemblies WHERE id = @id;
