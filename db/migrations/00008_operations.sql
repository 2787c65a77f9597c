-- +goose Up

-- An Engine-to-agent request that waits for the agent's reply. The Temporal
-- activity that sent it returned "result pending"; whichever process
-- receives the agent's reply takes the row and completes the activity by
-- its task token. The row also hands a request to the replica holding the
-- socket when the sender is another process (the NOTIFY carries only the
-- ID), so request size is not bounded by a notification.
CREATE TABLE agent_requests (
    id           text        PRIMARY KEY,
    device_guid  text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    operation_id text        NOT NULL,
    type         text        NOT NULL,
    payload      jsonb       NOT NULL DEFAULT '{}',
    task_token   bytea       NOT NULL,
    -- The replica that wrote it to the socket (NULL until delivered).
    replica      text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX agent_requests_device_idx ON agent_requests (device_guid);
CREATE INDEX agent_requests_expires_idx ON agent_requests (expires_at);

-- Processes that take agent sockets (`cairn serve` replicas running site
-- workers, standalone `cairn worker`s) and the address agents reach them
-- at; the realtime route names a live one that runs the device's site.
CREATE TABLE agent_endpoints (
    replica    text        PRIMARY KEY,
    url        text        NOT NULL,
    sites      text[]      NOT NULL DEFAULT '{}',
    seen_at    timestamptz NOT NULL DEFAULT now()
);

-- Remote shell sessions (docs/api.md "Remote shell"): who opened which
-- shell where, until when. Both tokens are single use and stored hashed:
-- the browser's (in ws_url) and the agent's (made when the browser
-- connects, sent in vpn_shell_open). The
-- transcript (asciicast v2, bounded) is kept for admins to replay. State:
-- pending (established) -> connecting (the browser's socket arrived at
-- replica) -> open (the agent's socket arrived) -> closed.
CREATE TABLE shell_sessions (
    id                   text        PRIMARY KEY,
    device_guid          text        REFERENCES devices (guid) ON DELETE SET NULL,
    hostname             text        NOT NULL,
    site_id              bigint,
    operator             text        NOT NULL,
    token_hash           bytea       NOT NULL,
    agent_token_hash     bytea,
    -- The Engine process holding the browser's socket, where the agent's
    -- socket must arrive (NULL until the browser connects).
    replica              text,
    state                text        NOT NULL DEFAULT 'pending',
    cols                 int         NOT NULL DEFAULT 80,
    rows                 int         NOT NULL DEFAULT 24,
    idle_timeout_seconds int         NOT NULL DEFAULT 900,
    exit_code            int,
    close_reason         text        NOT NULL DEFAULT '',
    activity_id          bigint,
    transcript           bytea,
    transcript_truncated boolean     NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now(),
    connected_at         timestamptz,
    started_at           timestamptz,
    ended_at             timestamptz,
    -- Refreshed every ShellTouchInterval by the process bridging the
    -- session; one it stopped refreshing (the process died) is closed by
    -- the shell-sessions maintenance job.
    seen_at              timestamptz,
    expires_at           timestamptz NOT NULL
);
CREATE INDEX shell_sessions_device_idx ON shell_sessions (device_guid);
CREATE INDEX shell_sessions_hostname_idx ON shell_sessions (lower(hostname), created_at DESC);

-- Scoped operation tokens (POST /api/remote-ops/session): one capability
-- on one device for one operator, short-lived, single use, stored hashed.
CREATE TABLE remote_op_tokens (
    token_hash  bytea       PRIMARY KEY,
    capability  text        NOT NULL,
    device_guid text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    operator    text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX remote_op_tokens_expires_idx ON remote_op_tokens (expires_at);

-- +goose Down
DROP TABLE remote_op_tokens;
DROP TABLE shell_sessions;
DROP TABLE agent_endpoints;
DROP TABLE agent_requests;
