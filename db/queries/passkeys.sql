-- name: PasskeyInsert :one
INSERT INTO passkeys (user_id, credential_id, credential, sign_count, label)
VALUES (@user_id, @credential_id, @credential, @sign_count, @label)
RETURNING *;

-- name: PasskeyListByUser :many
SELECT * FROM passkeys WHERE user_id = @user_id ORDER BY id;

-- name: PasskeyGetByCredentialID :one
SELECT * FROM passkeys WHERE credential_id = @credential_id;

-- name: PasskeyCountByUser :one
SELECT count(*) FROM passkeys WHERE user_id = @user_id;

-- name: PasskeyRename :one
-- Scoped to the owner: another operator's passkey is as missing as an
-- unknown one.
UPDATE passkeys SET label = @label WHERE id = @id AND user_id = @user_id
RETURNING *;

-- name: PasskeyDelete :execrows
DELETE FROM passkeys WHERE id = @id AND user_id = @user_id;

-- name: PasskeyDeleteByUser :exec
DELETE FROM passkeys WHERE user_id = @user_id;

-- name: PasskeyDeleteAllLocal :exec
-- A forced cipher reset flags every local account; their passkeys go with
-- the rest of their sign-in material (SPEC Authentication rule 2).
DELETE FROM passkeys WHERE user_id IN (SELECT id FROM users WHERE auth_source = 'local');

-- name: PasskeyUse :execrows
-- Accepts a sign-in only when the counter moved forward (or the
-- authenticator keeps no counter at all), atomically, so a cloned
-- authenticator replaying an old counter is refused even across replicas.
UPDATE passkeys SET sign_count = @sign_count, credential = @credential, last_used_at = now()
WHERE id = @id AND (sign_count < @sign_count OR (sign_count = 0 AND @sign_count = 0));

-- name: WebauthnCeremonyInsert :exec
INSERT INTO webauthn_ceremonies (id_hash, kind, user_id, session, expires_at)
VALUES (@id_hash, @kind, @user_id, @session, @expires_at);

-- name: WebauthnCeremonyTake :one
-- Deleting while reading makes the ceremony single use.
DELETE FROM webauthn_ceremonies WHERE id_hash = @id_hash AND kind = @kind
RETURNING *;

-- name: WebauthnCeremonyDeleteExpired :exec
DELETE FROM webauthn_ceremonies WHERE expires_at < @now;
