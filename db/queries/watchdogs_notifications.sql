-- Notification channels, their deliveries and maintenance windows
-- (internal/watchdogs, notify.go).

-- name: NotificationChannelInsert :one
INSERT INTO notification_channels (name, kind, enabled, min_severity, site_ids, repeat_minutes, config, created_by, updated_by)
VALUES (@name, @kind, @enabled, @min_severity, sqlc.narg(site_ids)::bigint[], @repeat_minutes, @config, @actor::text, @actor::text)
RETURNING *;

-- name: NotificationChannelUpdate :one
UPDATE notification_channels SET name = @name, enabled = @enabled, min_severity = @min_severity,
    site_ids = sqlc.narg(site_ids)::bigint[], repeat_minutes = @repeat_minutes, config = @config,
    updated_by = @actor::text, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: NotificationChannelSetSecret :exec
UPDATE notification_channels SET secret_sealed = @secret_sealed, secret_key_id = @secret_key_id WHERE id = @id;

-- name: NotificationChannelGet :one
SELECT * FROM notification_channels WHERE id = @id;

-- name: NotificationChannelList :many
SELECT * FROM notification_channels ORDER BY lower(name), id;

-- name: NotificationChannelDelete :execrows
DELETE FROM notification_channels WHERE id = @id;

-- name: NotificationChannelsFor :many
-- The enabled channels an incident of @severity on @site_id is routed to.
SELECT * FROM notification_channels
WHERE enabled
  AND array_position(ARRAY['info', 'warning', 'critical'], min_severity) <= array_position(ARRAY['info', 'warning', 'critical'], @severity::text)
  AND (site_ids IS NULL OR @site_id::bigint = ANY(site_ids))
ORDER BY id;

-- name: NotificationChannelSealedList :many
SELECT id, secret_sealed FROM notification_channels WHERE secret_sealed IS NOT NULL ORDER BY id;

-- name: NotificationChannelSealedUpdate :exec
UPDATE notification_channels SET secret_sealed = @secret_sealed, secret_key_id = @secret_key_id WHERE id = @id;

-- name: NotificationDeliveryClaim :one
-- Claims (incident, step, channel) for one send attempt: a new row, or a
-- row whose earlier attempt failed cleanly. No row back: another attempt
-- holds or finished it.
INSERT INTO notification_deliveries (incident_id, step, channel_id, status)
VALUES (@incident_id, @step, @channel_id, 'sending')
ON CONFLICT (incident_id, step, channel_id) DO UPDATE
    SET status = 'sending', attempts = notification_deliveries.attempts + 1, claimed_at = now()
    WHERE notification_deliveries.status = 'failed'
RETURNING *;

-- name: NotificationDeliveryGet :one
SELECT * FROM notification_deliveries WHERE incident_id = @incident_id AND step = @step AND channel_id = @channel_id;

-- name: NotificationDeliveryFinish :exec
UPDATE notification_deliveries SET status = @status, error = @error,
    sent_at = CASE WHEN @status = 'sent' THEN now() END
WHERE incident_id = @incident_id AND step = @step AND channel_id = @channel_id;

-- name: NotificationDeliveryLastSent :many
-- When each channel last notified of the incident (sent or abandoned:
-- an abandoned send may have gone out).
SELECT channel_id, max(claimed_at)::timestamptz AS last_at FROM notification_deliveries
WHERE incident_id = @incident_id AND status IN ('sent', 'abandoned', 'sending')
GROUP BY channel_id;

-- name: NotificationDeliveryList :many
SELECT * FROM notification_deliveries WHERE incident_id = @incident_id ORDER BY step, channel_id;

-- name: MaintenanceWindowInsert :one
INSERT INTO maintenance_windows (name, site_id, device_guid, watchdog_id, weekdays, start_minute, duration_minutes, time_zone, created_by)
VALUES (@name, sqlc.narg(site_id), sqlc.narg(device_guid), sqlc.narg(watchdog_id), @weekdays, @start_minute, @duration_minutes, @time_zone,
        @actor::text)
RETURNING *;

-- name: MaintenanceWindowUpdate :one
UPDATE maintenance_windows SET name = @name, site_id = sqlc.narg(site_id), device_guid = sqlc.narg(device_guid),
    watchdog_id = sqlc.narg(watchdog_id), weekdays = @weekdays, start_minute = @start_minute,
    duration_minutes = @duration_minutes, time_zone = @time_zone
WHERE id = @id
RETURNING *;

-- name: MaintenanceWindowList :many
SELECT * FROM maintenance_windows ORDER BY lower(name), id;

-- name: MaintenanceWindowGet :one
SELECT * FROM maintenance_windows WHERE id = @id;

-- name: MaintenanceWindowDelete :execrows
DELETE FROM maintenance_windows WHERE id = @id;

-- name: MaintenanceWindowsFor :many
-- The windows that cover an incident: its site's, its device's, its watchdog's.
SELECT * FROM maintenance_windows
WHERE site_id = @site_id OR device_guid = @device_guid::text OR watchdog_id = @watchdog_id
ORDER BY id;
