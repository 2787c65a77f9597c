-- Patch inventory, the fleet audit and installs (docs/api.md "Patches").

-- name: DevicePatchStatusUpsert :exec
INSERT INTO device_patch_status (device_guid, provider, reboot_required, reboot_packages, updated_at)
VALUES (@device_guid, @provider, @reboot_required, @reboot_packages, now())
ON CONFLICT (device_guid) DO UPDATE SET provider = EXCLUDED.provider, reboot_required = EXCLUDED.reboot_required,
    reboot_packages = EXCLUDED.reboot_packages, updated_at = now();

-- name: PatchDeviceByHostname :one
-- The in-scope device of a hostname with its patch status (NULLs: never
-- reported one).
SELECT d.guid, d.hostname, d.site_id, s.name AS site_name, d.operating_system,
       st.provider, st.reboot_required, st.reboot_packages, st.updated_at AS status_updated_at,
       i.collected_at
FROM devices d
JOIN sites s ON s.id = d.site_id
LEFT JOIN device_patch_status st ON st.device_guid = d.guid
LEFT JOIN device_inventory i ON i.device_guid = d.guid
WHERE lower(d.hostname) = lower(@hostname::text) AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]));

-- name: PatchDeviceRows :many
-- One device's rows with the open install that owns each, if any.
SELECT p.*, a.id AS active_install_id, a.state AS active_install_state
FROM device_patches p
LEFT JOIN patch_installs a ON a.device_guid = p.device_guid AND a.patch_key = p.patch_key
    AND a.state IN ('queued', 'running')
WHERE p.device_guid = @device_guid
ORDER BY p.state DESC, p.patch_key;

-- name: PatchAuditPage :many
-- A page of the fleet audit in (hostname, guid, patch_key) order after the
-- cursor: devices are walked by devices_hostname_guid_idx and each one's
-- rows by device_patches' primary key.
SELECT d.guid, d.hostname, lower(d.hostname)::text AS hostname_key, d.site_id, s.name AS site_name, d.operating_system,
       p.patch_key, p.kb, p.kbs, p.title, p.update_id, p.revision, p.state, p.source, p.package,
       p.installed_version, p.candidate_version, p.severity, p.security, p.origin, p.categories,
       p.reboot_behavior, p.size_bytes, p.released_at, p.installed_at, p.updated_at,
       COALESCE(st.reboot_required, false)::bool AS reboot_required,
       a.id AS active_install_id, a.state AS active_install_state
FROM devices d
JOIN sites s ON s.id = d.site_id
JOIN device_patches p ON p.device_guid = d.guid
LEFT JOIN device_patch_status st ON st.device_guid = d.guid
LEFT JOIN patch_installs a ON a.device_guid = p.device_guid AND a.patch_key = p.patch_key
    AND a.state IN ('queued', 'running')
WHERE (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
  AND (@site_id::bigint = 0 OR d.site_id = @site_id::bigint)
  AND (@hostname::text = '' OR lower(d.hostname) = lower(@hostname::text))
  AND (@state::text = '' OR p.state = @state::text)
  AND (@source::text = '' OR p.source = @source::text)
  AND (@severity::text = '' OR lower(p.severity) = lower(@severity::text))
  AND (NOT @security_only::bool OR p.security)
  AND (NOT @reboot_only::bool OR st.reboot_required)
  AND (@kb::text = '' OR p.kbs @> ARRAY[@kb::text])
  AND (@q::text = '' OR strpos(lower(p.title), @q::text) > 0)
  -- The first comparison lets the index seek to the cursor's device; the
  -- second orders within it.
  AND (lower(d.hostname), d.guid) >= (@after_hostname::text, @after_guid::text)
  AND (lower(d.hostname), d.guid, p.patch_key) > (@after_hostname::text, @after_guid::text, @after_key::text)
ORDER BY lower(d.hostname), d.guid, p.patch_key
LIMIT @max_rows;

-- name: PatchInstallInsert :one
-- A new queued install, or the open one of the same patch (the same
-- install: asking twice never installs twice).
INSERT INTO patch_installs (id, device_guid, patch_key, kb, update_id, revision, package, version, title,
                            scheduled_job_id, run_id, requested_by)
VALUES (@id, @device_guid, @patch_key, @kb, @update_id, @revision, @package, @version, @title,
        @scheduled_job_id, @run_id, @requested_by)
ON CONFLICT (device_guid, patch_key) WHERE state IN ('queued', 'running') DO UPDATE SET patch_key = EXCLUDED.patch_key
RETURNING *;

-- name: PatchInstallGet :one
SELECT * FROM patch_installs WHERE id = @id;

-- name: PatchInstallStart :one
-- Running, once the lane reaches it (a retried activity changes nothing).
UPDATE patch_installs SET state = 'running', started_at = COALESCE(started_at, now()), phase = 'starting'
WHERE id = @id AND state IN ('queued', 'running')
RETURNING *;

-- name: PatchInstallProgress :one
-- Progress the agent posts while the install runs; an older report
-- (captured before the last one) is ignored.
UPDATE patch_installs SET phase = @phase, percent = @percent, message = @message, progress_at = @captured_at
WHERE id = @id AND device_guid = @device_guid AND state = 'running'
  AND (progress_at IS NULL OR progress_at <= @captured_at)
RETURNING *;

-- name: PatchInstallFinish :one
-- The outcome after the re-scan. A finished install keeps its outcome.
UPDATE patch_installs SET state = @state, phase = 'finished', percent = CASE WHEN @state IN ('installed', 'already_installed') THEN 100 ELSE percent END,
    message = @message, exit_code = @exit_code, log_excerpt = @log_excerpt, finished_at = now()
WHERE id = @id AND state IN ('queued', 'running')
RETURNING *;

-- name: PatchInstallListByDevice :many
SELECT * FROM patch_installs WHERE device_guid = @device_guid ORDER BY created_at DESC, id LIMIT @max_rows;

-- name: DevicePatchGet :one
SELECT * FROM device_patches WHERE device_guid = @device_guid AND patch_key = @patch_key;

-- name: PatchPendingCount :one
-- Whether a patch is still pending on a device after a re-scan: its own
-- key, or any pending update of the same package (a newer candidate has
-- another key but is the same unfinished upgrade).
SELECT count(*) FROM device_patches
WHERE device_guid = @device_guid AND state = 'pending'
  AND (patch_key = @patch_key OR (@package::text <> '' AND package = @package::text));

-- name: PatchDeviceTarget :one
-- The patch row an install is requested for, with its device.
SELECT d.guid, d.hostname, d.site_id, s.slug AS site_slug, p.patch_key, p.kb, p.update_id, p.revision, p.package,
       p.candidate_version, p.title, p.state
FROM devices d
JOIN sites s ON s.id = d.site_id
JOIN device_patches p ON p.device_guid = d.guid
WHERE d.guid = @device_guid AND p.patch_key = @patch_key AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]));

-- Patch policies (docs/api.md "Patch policies").

-- name: PatchPolicyList :many
SELECT * FROM patch_policies
WHERE (@type::text = '' OR type = @type::text)
ORDER BY CASE type WHEN 'global' THEN 0 WHEN 'site' THEN 1 ELSE 2 END, role_scope, id;

-- name: PatchPolicyGet :one
SELECT * FROM patch_policies WHERE id = @id;

-- name: PatchPolicyInsert :one
INSERT INTO patch_policies (name, type, role_scope, enabled, site_id, device_filter_id, rules, exclusions, defaults,
                            maintenance_window, created_by)
VALUES (@name, @type, @role_scope, @enabled, @site_id, @device_filter_id, @rules, @exclusions, @defaults,
        @maintenance_window, @created_by)
RETURNING *;

-- name: PatchPolicyUpdate :one
-- A global policy keeps its type and role scope (the caller refuses a
-- change); a site or filter policy keeps its type.
UPDATE patch_policies SET name = @name, enabled = @enabled, site_id = @site_id, device_filter_id = @device_filter_id,
    rules = @rules, exclusions = @exclusions, defaults = @defaults, maintenance_window = @maintenance_window,
    role_scope = CASE WHEN locked THEN role_scope ELSE @role_scope END, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: PatchPolicyDelete :execrows
DELETE FROM patch_policies WHERE id = @id AND NOT locked;

-- name: PatchPolicyEvaluated :exec
UPDATE patch_policies SET last_evaluated_at = now() WHERE id = ANY(@ids::bigint[]);

-- name: PatchPolicyDevices :many
-- Devices inside scope with what decides their role scope, their site's
-- slug (their lane's queue), and whether a reboot is due on its own: the
-- device says it needs one and no reboot was asked of it since
-- reboot_asked_since.
SELECT d.guid, d.hostname, d.site_id, d.operating_system, s.slug AS site_slug,
       (COALESCE(st.reboot_required, false) AND NOT EXISTS (
           SELECT 1 FROM patch_reboots r
           WHERE r.device_guid = d.guid AND r.created_at >= @reboot_asked_since::timestamptz))::bool AS reboot_due
FROM devices d
JOIN sites s ON s.id = d.site_id
LEFT JOIN device_patch_status st ON st.device_guid = d.guid
WHERE (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
ORDER BY lower(d.hostname), d.guid;

-- name: PatchPolicyDevicesByGUID :many
-- PatchPolicyDevices for some devices only (one device's view, an audit
-- page), by their keys rather than a scan of the fleet.
SELECT d.guid, d.hostname, d.site_id, d.operating_system, s.slug AS site_slug,
       (COALESCE(st.reboot_required, false) AND NOT EXISTS (
           SELECT 1 FROM patch_reboots r
           WHERE r.device_guid = d.guid AND r.created_at >= @reboot_asked_since::timestamptz))::bool AS reboot_due
FROM devices d
JOIN sites s ON s.id = d.site_id
LEFT JOIN device_patch_status st ON st.device_guid = d.guid
WHERE d.guid = ANY(@guids::text[])
  AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]))
ORDER BY lower(d.hostname), d.guid;

-- name: PatchPolicyPendingRows :many
-- The pending rows of some devices: the candidates policies judge.
SELECT p.device_guid, p.patch_key, p.kb, p.kbs, p.title, p.severity, p.categories, p.package, p.security, p.released_at
FROM device_patches p
WHERE p.device_guid = ANY(@guids::text[]) AND p.state = 'pending'
ORDER BY p.device_guid, p.patch_key;

-- name: PatchRebootInsert :one
-- A new queued reboot, or the device's open one (asking twice reboots
-- once; a forced request makes the open one forced).
INSERT INTO patch_reboots (id, device_guid, when_required, forced, policy_id, requested_by, run_id)
VALUES (@id, @device_guid, @when_required, @forced, @policy_id, @requested_by, @run_id)
ON CONFLICT (device_guid) WHERE state IN ('queued', 'running') DO UPDATE
    SET forced = patch_reboots.forced OR EXCLUDED.forced,
        when_required = patch_reboots.when_required AND EXCLUDED.when_required
RETURNING *;

-- name: PatchRebootGet :one
SELECT * FROM patch_reboots WHERE id = @id;

-- name: PatchRebootStart :one
-- Running, once the lane reaches it (a retried activity changes nothing).
UPDATE patch_reboots SET state = 'running', started_at = COALESCE(started_at, now())
WHERE id = @id AND state IN ('queued', 'running')
RETURNING *;

-- name: PatchRebootFinish :one
-- The agent's answer. A finished reboot keeps its outcome.
UPDATE patch_reboots SET state = @state, message = @message, signed_in = @signed_in::text[], finished_at = now()
WHERE id = @id AND state IN ('queued', 'running')
RETURNING *;

-- name: PatchRebootListByDevice :many
SELECT * FROM patch_reboots WHERE device_guid = @device_guid ORDER BY created_at DESC, id LIMIT @max_rows;

-- name: PatchEnforcementInsert :one
INSERT INTO patch_enforcements (id, device_guid, mode, policy_id, requested_by)
VALUES (@id, @device_guid, @mode, @policy_id, @requested_by)
RETURNING *;

-- name: PatchEnforcementGet :one
SELECT * FROM patch_enforcements WHERE id = @id;

-- name: PatchEnforcementStart :one
-- Running, once the lane reaches it (a retried activity changes nothing).
UPDATE patch_enforcements SET state = 'running', started_at = COALESCE(started_at, now())
WHERE id = @id AND state IN ('queued', 'running')
RETURNING *;

-- name: PatchEnforcementFinish :one
-- The agent's answer. A finished enforcement keeps its outcome.
UPDATE patch_enforcements SET state = @state, message = @message, "values" = @values::jsonb, finished_at = now()
WHERE id = @id AND state IN ('queued', 'running')
RETURNING *;

-- name: PatchEnforcementLatest :many
-- The newest enforcement of each of some devices: what the Engine last
-- asked of them and how it went.
SELECT DISTINCT ON (device_guid) *
FROM patch_enforcements
WHERE device_guid = ANY(@guids::text[])
ORDER BY device_guid, created_at DESC, id DESC;

-- name: PatchEnforcementListByDevice :many
SELECT * FROM patch_enforcements WHERE device_guid = @device_guid ORDER BY created_at DESC, id LIMIT @max_rows;
-- Patch install jobs (scheduled jobs of kind patch_install).

-- name: PatchRunInsert :execrows
-- A patch_install job's run, once per run ID (a retried or restarted
-- fire inserts nothing and finds its run's installs already made).
INSERT INTO job_runs (id, scheduled_job_id, kind, trigger, status, requested_by, target_count, scheduled_for, started_at)
VALUES (@id, @scheduled_job_id, 'patch_install', @trigger, 'running', @requested_by, @target_count,
        sqlc.narg(scheduled_for), now())
ON CONFLICT DO NOTHING;

-- name: PatchRunLock :one
-- The run, locked while its installs are made.
SELECT id, status FROM job_runs WHERE id = @id FOR UPDATE;

-- name: PatchRunResultInsert :exec
INSERT INTO job_run_results (run_id, device_guid, hostname, site_id, status, error_code, error_message, started_at, finished_at)
VALUES (@run_id, @device_guid, @hostname, @site_id, @status, @error_code, @error_message, now(),
        CASE WHEN @status::text IN ('pending', 'running') THEN NULL ELSE now() END)
ON CONFLICT (run_id, device_guid) DO NOTHING;

-- name: PatchPendingKeys :many
-- The pending patch keys of some devices.
SELECT device_guid, patch_key FROM device_patches
WHERE device_guid = ANY(@guids::text[]) AND state = 'pending'
ORDER BY device_guid, patch_key;

-- name: PatchInstallListByRun :many
-- A run's installs with where their lanes run.
SELECT sqlc.embed(i), d.hostname, s.slug AS site_slug
FROM patch_installs i JOIN devices d ON d.guid = i.device_guid JOIN sites s ON s.id = d.site_id
WHERE i.run_id = @run_id
ORDER BY i.device_guid, i.created_at, i.id;

-- name: PatchRebootListByRun :many
-- The reboots a run asks for after its installs.
SELECT sqlc.embed(r), d.hostname, s.slug AS site_slug
FROM patch_reboots r JOIN devices d ON d.guid = r.device_guid JOIN sites s ON s.id = d.site_id
WHERE r.run_id = @run_id
ORDER BY r.device_guid, r.created_at, r.id;

-- name: PatchRunResultSettle :exec
-- A device's part of a run once its installs ended: succeeded when each
-- is installed (confirmed by the re-scan) or already installed.
UPDATE job_run_results x SET
    status = CASE WHEN NOT EXISTS (SELECT 1 FROM patch_installs i WHERE i.run_id = x.run_id AND i.device_guid = x.device_guid
                                      AND i.state NOT IN ('installed', 'already_installed'))
                  THEN 'succeeded' ELSE 'failed' END,
    error_message = (SELECT COALESCE(string_agg(i.patch_key || ': ' || i.state, '; ' ORDER BY i.patch_key), '')
                     FROM patch_installs i WHERE i.run_id = x.run_id AND i.device_guid = x.device_guid
                       AND i.state NOT IN ('installed', 'already_installed')),
    finished_at = now()
WHERE x.run_id = @run_id AND x.status IN ('pending', 'running')
  AND NOT EXISTS (SELECT 1 FROM patch_installs i WHERE i.run_id = x.run_id AND i.device_guid = x.device_guid
                    AND i.state IN ('queued', 'running'));

-- name: PatchRunSettle :exec
-- The run once no device's part is open: succeeded when every part
-- succeeded or was skipped (nothing of it pending any more).
UPDATE job_runs r SET
    status = CASE WHEN NOT EXISTS (SELECT 1 FROM job_run_results x WHERE x.run_id = r.id AND x.status NOT IN ('succeeded', 'skipped'))
                  THEN 'succeeded' ELSE 'failed' END,
    finished_at = now()
WHERE r.id = @id AND r.status IN ('pending', 'running')
  AND NOT EXISTS (SELECT 1 FROM job_run_results x WHERE x.run_id = r.id AND x.status IN ('pending', 'running'));

-- name: PatchRunOpenCount :one
-- How many of a run's installs are still queued or running.
SELECT count(*) FROM patch_installs WHERE run_id = @run_id AND state IN ('queued', 'running');

-- name: PatchInstallJobInsert :one
-- An immediate patch_install job a policy evaluation creates (manual
-- schedule: it fires once, now, from the evaluation).
INSERT INTO scheduled_jobs (name, kind, parameters, targets, schedule, options, enabled, created_by, updated_by)
VALUES (@name, 'patch_install', @parameters, @targets, '{"type": "manual"}', '{}', true, @actor, @actor)
RETURNING id;

-- name: PatchInstallOpenKeys :many
-- Every queued or running install's device and patch: an evaluation asks
-- for none of them again.
SELECT device_guid, patch_key FROM patch_installs WHERE state IN ('queued', 'running');
