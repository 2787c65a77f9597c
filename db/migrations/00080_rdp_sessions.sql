-- +goose Up

-- RDP sessions (issue 23, "Remote desktop (RDP)"): a remote desktop
-- session's protocol may now be rdp. Its credentials are never stored
-- here: a stored credential is named in the workflow's input by ID only,
-- manual ones live in the establishing Engine's memory.
ALTER TABLE vnc_sessions DROP CONSTRAINT vnc_sessions_protocol_check;
ALTER TABLE vnc_sessions ADD CONSTRAINT vnc_sessions_protocol_check CHECK (protocol IN ('vnc', 'rdp'));

-- +goose Down
DELETE FROM vnc_sessions WHERE protocol = 'rdp';
ALTER TABLE vnc_sessions DROP CONSTRAINT vnc_sessions_protocol_check;
ALTER TABLE vnc_sessions ADD CONSTRAINT vnc_sessions_protocol_check CHECK (protocol IN ('vnc'));
