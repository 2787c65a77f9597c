-- +goose Up

-- Remote desktop sessions (issue 23, VNC): one row per establishment,
-- from the request to its end. The browser's one-time token is stored
-- hashed and cleared when redeemed; the VNC password is never stored (the
-- gateway holds it in memory for the live session only). status:
-- establishing, ready (token issued), live (browser attached), ended.
CREATE TABLE vnc_sessions (
    id               text        PRIMARY KEY,
    device_guid      text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    site_id          bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    hostname         text        NOT NULL,
    operator         text        NOT NULL,
    protocol         text        NOT NULL DEFAULT 'vnc' CHECK (protocol IN ('vnc')),
    quality          text        NOT NULL DEFAULT 'speed' CHECK (quality IN ('speed', 'quality')),
    status           text        NOT NULL DEFAULT 'establishing'
                                 CHECK (status IN ('establishing', 'ready', 'live', 'ended')),
    token_hash       bytea,
    token_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    ready_at         timestamptz,
    attached_at      timestamptz,
    first_frame_at   timestamptz,
    ended_at         timestamptz,
    end_reason       text        NOT NULL DEFAULT '',
    error_code       text        NOT NULL DEFAULT '',
    error_message    text        NOT NULL DEFAULT ''
);
CREATE INDEX vnc_sessions_device_idx ON vnc_sessions (device_guid, created_at DESC);
CREATE INDEX vnc_sessions_active_idx ON vnc_sessions (site_id) WHERE status <> 'ended';
CREATE UNIQUE INDEX vnc_sessions_token_idx ON vnc_sessions (token_hash) WHERE token_hash IS NOT NULL;

-- +goose Down
DROP TABLE vnc_sessions;
