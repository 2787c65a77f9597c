-- +goose Up

-- When the session's operator last proved who they are again (password
-- and TOTP code, or a passkey) at POST /api/auth/reauth. Account and
-- directory administration needs a proof younger than the re-authentication
-- window (issue 21 item 5): a session cookie alone, however it was taken,
-- cannot mint accounts. Signing in does not count.
ALTER TABLE sessions ADD COLUMN reauthenticated_at timestamptz;

-- +goose Down
ALTER TABLE sessions DROP COLUMN reauthenticated_at;
