-- name: UserGetByUsername :one
SELECT * FROM users WHERE username = lower(@username::text);

-- name: UserGetByID :one
SELECT * FROM users WHERE id = @id;

-- name: UserInsert :one
-- Accounts an administrator creates are active at once; the first-run
-- administrator becomes active when its MFA is verified.
INSERT INTO users (username, role, password_sealed, totp_sealed, password_changed_at, activated_at)
VALUES (lower(@username::text), @role, @password_sealed, @totp_sealed, now(),
        CASE WHEN @activated::bool THEN now() END)
RETURNING *;

-- name: UserCounts :one
SELECT
    count(*)                                                                         AS total,
    count(*) FILTER (WHERE role = 'admin' AND NOT recovery_required AND activated_at IS NOT NULL) AS ready_admins,
    count(*) FILTER (WHERE role = 'admin' AND recovery_required)                     AS flagged_admins
FROM users;

-- name: UserDeleteUnconfirmedAdmins :exec
-- A first-run administrator who never completed MFA may be replaced by a new
-- setup attempt; a confirmed one never is.
DELETE FROM users WHERE role = 'admin' AND activated_at IS NULL AND NOT recovery_required;

-- name: UserSetTOTP :exec
UPDATE users SET totp_sealed = @totp_sealed, mfa_confirmed = false, totp_last_step = 0, updated_at = now()
WHERE id = @id;

-- name: UserConfirmTOTP :execrows
-- Records the accepted TOTP step; refuses a step not newer than the last one,
-- so a code cannot be replayed, even on another replica.
UPDATE users SET mfa_confirmed = true, totp_last_step = @step,
    activated_at = coalesce(activated_at, now()), updated_at = now()
WHERE id = @id AND totp_last_step < @step;

-- name: UserClearTOTP :exec
UPDATE users SET totp_sealed = NULL, mfa_confirmed = false, totp_last_step = 0, updated_at = now()
WHERE id = @id;

-- name: UserSetPassword :exec
UPDATE users SET password_sealed = @password_sealed, password_changed_at = now(), updated_at = now()
WHERE id = @id;

-- name: UserRecover :exec
-- The account stays flagged until the new authenticator is verified
-- (UserFinishRecovery), so the phase stays admin_recovery_required.
UPDATE users SET password_sealed = @password_sealed, totp_sealed = @totp_sealed,
    mfa_required = true, mfa_confirmed = false, totp_last_step = 0,
    password_changed_at = now(), updated_at = now()
WHERE id = @id;

-- name: UserFinishRecovery :exec
UPDATE users SET recovery_required = false, updated_at = now() WHERE id = @id;

-- name: UserFlagAllForRecovery :exec
-- After a cipher reset every sealed secret is unreadable: flag every local
-- account and drop the material that can no longer be opened.
UPDATE users SET recovery_required = true, password_sealed = NULL, totp_sealed = NULL,
    mfa_confirmed = false, totp_last_step = 0, updated_at = now()
WHERE auth_source = 'local';

-- name: UserSetMFARequired :exec
UPDATE users SET mfa_required = @mfa_required, updated_at = now() WHERE id = @id;
