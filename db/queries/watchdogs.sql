-- Watchdogs, their evaluation state, incidents and device overrides
-- (internal/watchdogs).

-- name: WatchdogInsert :one
INSERT INTO watchdogs (name, description, severity, enabled, site_ids, policy, created_by, updated_by)
VALUES (@name, @description, @severity, @enabled, sqlc.narg(site_ids)::bigint[], @policy, @actor::text, @actor::text)
RETURNING *;

-- name: WatchdogUpdate :one
UPDATE watchdogs SET name = @name, description = @description, severity = @severity, enabled = @enabled,
    site_ids = sqlc.narg(site_ids)::bigint[], policy = @policy, revision = revision + 1,
    updated_by = @actor::text, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: WatchdogGet :one
SELECT * FROM watchdogs WHERE id = @id;

-- name: WatchdogGetForUpdate :one
SELECT * FROM watchdogs WHERE id = @id FOR UPDATE;

-- name: WatchdogList :many
SELECT * FROM watchdogs ORDER BY lower(name), id;

-- name: WatchdogListDue :many
-- Enabled watchdogs whose interval has passed since their last evaluation.
SELECT * FROM watchdogs
WHERE enabled AND (evaluated_at IS NULL
    OR evaluated_at + make_interval(secs => (policy->'noise'->>'interval_seconds')::int) <= @now::timestamptz)
ORDER BY id;

-- name: WatchdogMarkEvaluated :exec
UPDATE watchdogs SET evaluated_at = @now::timestamptz WHERE id = @id AND revision = @revision;

-- name: WatchdogDelete :exec
DELETE FROM watchdogs WHERE id = @id;

-- name: WatchdogTargetsAll :many
-- A page of the devices in a watchdog's scope (NULL: every site), in GUID
-- order after @after. Revoked devices are targets of nothing.
SELECT guid, site_id FROM devices
WHERE (sqlc.narg(site_ids)::bigint[] IS NULL OR site_id = ANY(sqlc.narg(site_ids)::bigint[]))
  AND trust_state <> 'revoked' AND guid > @after::text
ORDER BY guid
LIMIT @max_rows::int;

-- name: WatchdogTargetsExplicit :many
-- The named devices that exist inside the scope.
SELECT guid, site_id FROM devices
WHERE guid = ANY(@guids::text[])
  AND (sqlc.narg(site_ids)::bigint[] IS NULL OR site_id = ANY(sqlc.narg(site_ids)::bigint[]))
  AND trust_state <> 'revoked'
ORDER BY guid;

-- name: WatchdogDeviceSnapshots :many
-- What rules read of each device: the heartbeat columns, the inventory
-- collections, installed software and role health. The collections a
-- policy's rules do not read are left out (NULL): reading and decoding
-- every device's services, processes and software for every watchdog was
-- most of an evaluation's cost (docs/benchmarks.md "Watchdogs").
SELECT d.guid, d.site_id, d.hostname, d.last_seen, d.metrics, d.agent_version, d.boot_id, d.trust_state,
    i.hardware,
    (CASE WHEN @with_services::boolean THEN i.services END)::jsonb AS services,
    (CASE WHEN @with_processes::boolean THEN i.processes END)::jsonb AS processes,
    i.collected_at,
    (CASE WHEN @with_software::boolean THEN
        coalesce((SELECT jsonb_agg(jsonb_build_object('name', s.name_key, 'version', s.version))
                  FROM device_software s WHERE s.device_guid = d.guid), '[]'::jsonb) END)::jsonb AS software,
    (CASE WHEN @with_roles::boolean THEN
        coalesce((SELECT jsonb_agg(jsonb_build_object('key', r.key, 'observed', r.observed))
                  FROM device_roles r WHERE r.device_guid = d.guid), '[]'::jsonb) END)::jsonb AS roles
FROM devices d
LEFT JOIN device_inventory i ON i.device_guid = d.guid
WHERE d.guid = ANY(@guids::text[])
ORDER BY d.guid;

-- name: WatchdogStatesGet :many
SELECT * FROM watchdog_device_state
WHERE watchdog_id = @watchdog_id AND device_guid = ANY(@guids::text[])
FOR UPDATE;

-- name: WatchdogStateUpsert :exec
INSERT INTO watchdog_device_state (watchdog_id, device_guid, consecutive, memo, clear_since, last_resolved_at, evaluated_at)
VALUES (@watchdog_id, @device_guid, @consecutive, @memo, sqlc.narg(clear_since), sqlc.narg(last_resolved_at), @evaluated_at)
ON CONFLICT (watchdog_id, device_guid) DO UPDATE SET consecutive = EXCLUDED.consecutive,
    memo = EXCLUDED.memo, clear_since = EXCLUDED.clear_since,
    last_resolved_at = EXCLUDED.last_resolved_at, evaluated_at = EXCLUDED.evaluated_at;

-- name: WatchdogStatesClear :exec
-- Runtime state of a watchdog, dropped when its policy is saved.
DELETE FROM watchdog_device_state WHERE watchdog_id = @watchdog_id;

-- name: WatchdogIncidentsActiveOf :many
-- The active incidents of a watchdog, locked for the evaluation.
SELECT * FROM watchdog_incidents
WHERE watchdog_id = @watchdog_id AND state <> 'Resolved'
ORDER BY device_guid
FOR UPDATE;

-- name: WatchdogIncidentOpen :one
-- Opens an incident unless one is active for the pair: the partial unique
-- index decides, so a racing evaluator gets no row.
INSERT INTO watchdog_incidents (watchdog_id, device_guid, site_id, severity, title, sampled, offline_only, opened_at, last_matched_at, updated_at)
VALUES (@watchdog_id, @device_guid, @site_id, @severity, @title, @sampled, @offline_only, @now::timestamptz, @now::timestamptz, @now::timestamptz)
ON CONFLICT (watchdog_id, device_guid) WHERE state <> 'Resolved' DO NOTHING
RETURNING *;

-- name: WatchdogIncidentTouch :exec
UPDATE watchdog_incidents SET sampled = @sampled, last_matched_at = @now::timestamptz
WHERE id = @id AND state <> 'Resolved';

-- name: WatchdogIncidentResolve :one
UPDATE watchdog_incidents SET state = 'Resolved', resolved_at = @now::timestamptz, resolve_reason = @reason::text, updated_at = @now::timestamptz
WHERE id = @id AND state <> 'Resolved'
RETURNING *;

-- name: WatchdogIncidentPurge :execrows
DELETE FROM watchdog_incidents WHERE id = @id AND state <> 'Resolved';

-- name: WatchdogIncidentsResolveOf :many
-- Every active incident of a watchdog (policy disabled).
UPDATE watchdog_incidents SET state = 'Resolved', resolved_at = @now::timestamptz, resolve_reason = @reason::text, updated_at = @now::timestamptz
WHERE watchdog_id = @watchdog_id AND state <> 'Resolved'
RETURNING *;

-- name: WatchdogIncidentGet :one
SELECT * FROM watchdog_incidents WHERE id = @id;

-- name: WatchdogIncidentGetForUpdate :one
SELECT * FROM watchdog_incidents WHERE id = @id FOR UPDATE;

-- name: WatchdogIncidentAcknowledge :one
UPDATE watchdog_incidents SET state = 'Acknowledged', acknowledged_by = @actor::text, acknowledged_at = @now::timestamptz, updated_at = @now::timestamptz
WHERE id = @id AND state = 'Open'
RETURNING *;

-- name: WatchdogIncidentSuppress :one
UPDATE watchdog_incidents SET state = 'Suppressed', suppressed_by = @actor::text, suppressed_at = @now::timestamptz,
    suppress_reason = @reason::text, updated_at = @now::timestamptz
WHERE id = @id AND state IN ('Open', 'Acknowledged')
RETURNING *;

-- name: WatchdogIncidentReopen :one
UPDATE watchdog_incidents SET state = 'Open', suppressed_by = NULL, suppressed_at = NULL, suppress_reason = NULL,
    updated_at = @now::timestamptz
WHERE id = @id AND state = 'Suppressed'
RETURNING *;

-- name: WatchdogIncidentActiveFor :one
SELECT * FROM watchdog_incidents
WHERE watchdog_id = @watchdog_id AND device_guid = @device_guid AND state <> 'Resolved'
FOR UPDATE;

-- name: WatchdogIncidentAddOutcome :exec
UPDATE watchdog_incidents SET outcomes = outcomes || jsonb_build_array(@outcome::jsonb), updated_at = now()
WHERE id = @id;

-- name: WatchdogIncidentList :many
-- A page of incidents inside the caller's sites (NULL: every site),
-- newest first, filtered by state, severity, watchdog and device.
SELECT i.*, w.name AS watchdog_name, d.hostname
FROM watchdog_incidents i
JOIN watchdogs w ON w.id = i.watchdog_id
JOIN devices d ON d.guid = i.device_guid
WHERE (sqlc.narg(scope)::bigint[] IS NULL OR i.site_id = ANY(sqlc.narg(scope)::bigint[]))
  AND (sqlc.narg(states)::text[] IS NULL OR i.state = ANY(sqlc.narg(states)::text[]))
  AND (sqlc.narg(severity)::text IS NULL OR i.severity = sqlc.narg(severity)::text)
  AND (sqlc.narg(watchdog_id)::bigint IS NULL OR i.watchdog_id = sqlc.narg(watchdog_id)::bigint)
  AND (sqlc.narg(device_guid)::text IS NULL OR i.device_guid = sqlc.narg(device_guid)::text)
  AND (sqlc.narg(site_id)::bigint IS NULL OR i.site_id = sqlc.narg(site_id)::bigint)
ORDER BY i.opened_at DESC, i.id DESC
LIMIT @max_rows::int OFFSET @skip::int;

-- name: WatchdogIncidentCount :one
SELECT count(*) FROM watchdog_incidents i
WHERE (sqlc.narg(scope)::bigint[] IS NULL OR i.site_id = ANY(sqlc.narg(scope)::bigint[]))
  AND (sqlc.narg(states)::text[] IS NULL OR i.state = ANY(sqlc.narg(states)::text[]))
  AND (sqlc.narg(severity)::text IS NULL OR i.severity = sqlc.narg(severity)::text)
  AND (sqlc.narg(watchdog_id)::bigint IS NULL OR i.watchdog_id = sqlc.narg(watchdog_id)::bigint)
  AND (sqlc.narg(device_guid)::text IS NULL OR i.device_guid = sqlc.narg(device_guid)::text)
  AND (sqlc.narg(site_id)::bigint IS NULL OR i.site_id = sqlc.narg(site_id)::bigint);

-- name: WatchdogIncidentQueueCounts :many
-- The queue's counts per state and severity inside the caller's sites.
SELECT state, severity, count(*) AS incidents FROM watchdog_incidents
WHERE (sqlc.narg(scope)::bigint[] IS NULL OR site_id = ANY(sqlc.narg(scope)::bigint[]))
GROUP BY state, severity
ORDER BY state, severity;

-- name: WatchdogIncidentsOfDevice :many
SELECT * FROM watchdog_incidents WHERE device_guid = @device_guid AND state <> 'Resolved' ORDER BY watchdog_id;

-- name: WatchdogOverrideUpsert :one
INSERT INTO watchdog_device_overrides (watchdog_id, device_guid, reason, created_by)
VALUES (@watchdog_id, @device_guid, @reason::text, @actor::text)
ON CONFLICT (watchdog_id, device_guid) DO UPDATE SET reason = EXCLUDED.reason, created_by = EXCLUDED.created_by,
    created_at = now()
RETURNING *;

-- name: WatchdogOverrideDelete :execrows
DELETE FROM watchdog_device_overrides WHERE watchdog_id = @watchdog_id AND device_guid = @device_guid;

-- name: WatchdogOverridesOfDevice :many
SELECT * FROM watchdog_device_overrides WHERE device_guid = @device_guid ORDER BY watchdog_id;

-- name: WatchdogOverridesOf :many
SELECT device_guid FROM watchdog_device_overrides
WHERE watchdog_id = @watchdog_id AND device_guid = ANY(@guids::text[]);

-- name: WatchdogIncidentsActiveOfUnlocked :many
SELECT * FROM watchdog_incidents WHERE watchdog_id = @watchdog_id AND state <> 'Resolved' ORDER BY device_guid;

-- name: WatchdogDeviceSite :one
SELECT site_id, trust_state FROM devices WHERE guid = @guid;

-- name: WatchdogIncidentsWithoutOutcomes :many
-- Active incidents opened before @before whose watchdog has actions and
-- that recorded none, or that a notification channel is routed to and
-- that notified none: their workflow may never have started.
SELECT i.id FROM watchdog_incidents i JOIN watchdogs w ON w.id = i.watchdog_id
WHERE i.state <> 'Resolved' AND i.opened_at < @before::timestamptz
  AND ((i.outcomes = '[]'::jsonb AND jsonb_array_length(w.policy->'actions') > 0)
    OR (NOT EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.incident_id = i.id)
      AND EXISTS (SELECT 1 FROM notification_channels c
        WHERE c.enabled AND (c.site_ids IS NULL OR i.site_id = ANY(c.site_ids))
          AND array_position(ARRAY['info', 'warning', 'critical'], c.min_severity)
            <= array_position(ARRAY['info', 'warning', 'critical'], i.severity))))
ORDER BY i.id
LIMIT 1000;
