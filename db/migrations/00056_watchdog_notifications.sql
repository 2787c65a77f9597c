-- +goose Up

-- Notification channels (issue 25, docs/api.md "Watchdog notifications"):
-- where an incident's notifications go. kind is webhook or email; config
-- holds the non-secret settings (URL; SMTP host, port, username, from,
-- recipients, an extra CA); the secret (webhook HMAC key, SMTP password)
-- is sealed with the master cipher, bound to the row (aad
-- cairn:notification_channel:<id>:secret), and never leaves the Engine.
-- Routing: incidents of min_severity or above on site_ids (NULL: every
-- site). repeat_minutes > 0 repeats the notification while the incident
-- stays Open (unacknowledged).
CREATE TABLE notification_channels (
    id             bigserial   PRIMARY KEY,
    name           text        NOT NULL CHECK (btrim(name) <> ''),
    kind           text        NOT NULL CHECK (kind IN ('webhook', 'email')),
    enabled        boolean     NOT NULL DEFAULT true,
    min_severity   text        NOT NULL DEFAULT 'info' CHECK (min_severity IN ('info', 'warning', 'critical')),
    site_ids       bigint[],
    repeat_minutes integer     NOT NULL DEFAULT 0 CHECK (repeat_minutes BETWEEN 0 AND 10080),
    config         jsonb       NOT NULL DEFAULT '{}',
    secret_sealed  bytea,
    secret_key_id  bytea,
    created_by     text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_by     text        NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX notification_channels_name_idx ON notification_channels (lower(name));

-- One row per (incident, step, channel), inserted (claimed) before the
-- message is sent: a retried or restarted send that finds the row
-- 'sending' (its earlier attempt died after the claim) does not send
-- again. 'failed' is a send that failed cleanly (nothing delivered) and
-- may be claimed again by the next attempt. Step 0 is the opening's
-- notification, step n the n-th repetition.
CREATE TABLE notification_deliveries (
    incident_id bigint      NOT NULL REFERENCES watchdog_incidents (id) ON DELETE CASCADE,
    step        integer     NOT NULL CHECK (step >= 0),
    channel_id  bigint      NOT NULL REFERENCES notification_channels (id) ON DELETE CASCADE,
    status      text        NOT NULL CHECK (status IN ('sending', 'sent', 'failed', 'abandoned')),
    attempts    integer     NOT NULL DEFAULT 1,
    error       text        NOT NULL DEFAULT '',
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz,
    PRIMARY KEY (incident_id, step, channel_id)
);
CREATE INDEX notification_deliveries_channel_idx ON notification_deliveries (channel_id);

-- Maintenance windows: recurring weekly periods during which the
-- notifications of one site's, one device's or one watchdog's incidents
-- are held back (evaluation goes on; incidents still open). weekdays are
-- 0 (Sunday) to 6, start_minute the minute of the day in time_zone.
CREATE TABLE maintenance_windows (
    id               bigserial   PRIMARY KEY,
    name             text        NOT NULL CHECK (btrim(name) <> ''),
    site_id          bigint      REFERENCES sites (id) ON DELETE CASCADE,
    device_guid      text        REFERENCES devices (guid) ON DELETE CASCADE,
    watchdog_id      bigint      REFERENCES watchdogs (id) ON DELETE CASCADE,
    weekdays         integer[]   NOT NULL CHECK (cardinality(weekdays) BETWEEN 1 AND 7 AND weekdays <@ ARRAY[0,1,2,3,4,5,6]),
    start_minute     integer     NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
    duration_minutes integer     NOT NULL CHECK (duration_minutes BETWEEN 1 AND 10080),
    time_zone        text        NOT NULL DEFAULT 'UTC',
    created_by       text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(site_id, device_guid, watchdog_id) = 1)
);
CREATE INDEX maintenance_windows_site_idx ON maintenance_windows (site_id);
CREATE INDEX maintenance_windows_device_idx ON maintenance_windows (device_guid);
CREATE INDEX maintenance_windows_watchdog_idx ON maintenance_windows (watchdog_id);

-- +goose Down
DROP TABLE maintenance_windows;
DROP TABLE notification_deliveries;
DROP TABLE notification_channels;
