-- +goose Up

-- vnc_auth_retry is single-flight per device (SPEC "Remote desktop rules"
-- 7): the one establishment that rotates the agent's credential holds the
-- device's row until settled_until; another meanwhile is refused with
-- vnc_auth_retry_in_progress (its session still establishing or live) or
-- vnc_auth_retry_settling, and retry_after_seconds.
CREATE TABLE vnc_auth_retries (
    device_guid   text        PRIMARY KEY REFERENCES devices (guid) ON DELETE CASCADE,
    session_id    text        NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    settled_until timestamptz NOT NULL
);

ALTER TABLE vnc_sessions ADD COLUMN reason text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE vnc_sessions DROP COLUMN reason;
DROP TABLE vnc_auth_retries;
