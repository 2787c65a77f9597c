-- Every column sealed by the master cipher, listed and rewritten by a
-- data-key rotation (internal/aegis Rotate) inside one transaction. The
-- lists lock their rows so a concurrent write waits for the rotation.
-- TestEverySealedColumnIsResealed checks this list against the schema.

-- name: UserSealedList :many
SELECT id, username, password_sealed, totp_sealed FROM users
WHERE password_sealed IS NOT NULL OR totp_sealed IS NOT NULL
ORDER BY id FOR UPDATE;

-- name: UserSealedUpdate :exec
UPDATE users SET password_sealed = sqlc.narg(password_sealed), totp_sealed = sqlc.narg(totp_sealed) WHERE id = @id;

-- name: EnrollmentCodeSealedList :many
SELECT id, code_sealed FROM enrollment_codes ORDER BY id FOR UPDATE;

-- name: EnrollmentCodeSealedUpdate :exec
UPDATE enrollment_codes SET code_sealed = @code_sealed WHERE id = @id;

-- name: DirectoryProviderSealedList :many
SELECT id, bind_password_sealed FROM directory_providers WHERE bind_password_sealed IS NOT NULL ORDER BY id FOR UPDATE;

-- name: DirectoryProviderSealedUpdate :exec
UPDATE directory_providers SET bind_password_sealed = @bind_password_sealed WHERE id = @id;

-- name: StoredCredentialSealedList :many
SELECT id, password_sealed FROM stored_credentials ORDER BY id FOR UPDATE;

-- name: StoredCredentialSealedUpdate :exec
UPDATE stored_credentials SET password_sealed = @password_sealed, password_key_id = @password_key_id WHERE id = @id;

-- name: SourceTokenSealedList :many
SELECT id, token_sealed FROM source_token ORDER BY id FOR UPDATE;

-- name: SourceTokenSealedUpdate :exec
UPDATE source_token SET token_sealed = @token_sealed, key_id = @key_id WHERE id = @id;

-- name: ScriptSigningKeySealedList :many
SELECT key_id, private_sealed FROM script_signing_keys ORDER BY key_id FOR UPDATE;

-- name: ScriptSigningKeySealedUpdate :exec
UPDATE script_signing_keys SET private_sealed = @private_sealed, sealed_key_id = @sealed_key_id WHERE key_id = @key_id;

-- name: SealedColumnNames :many
-- Every bytea column of the schema whose name says it holds a sealed value.
SELECT (table_name || '.' || column_name)::text AS name FROM information_schema.columns
WHERE table_schema = current_schema() AND data_type = 'bytea' AND column_name LIKE '%\_sealed'
ORDER BY 1;
