-- name: AegisStateGet :one
SELECT * FROM aegis_state WHERE id = 1;

-- name: AegisStateInsert :exec
INSERT INTO aegis_state (id, kdf_salt, kdf_time, kdf_memory_kib, kdf_threads, wrapped_key, key_id)
VALUES (1, @kdf_salt, @kdf_time, @kdf_memory_kib, @kdf_threads, @wrapped_key, @key_id);

-- name: AegisStateDelete :exec
DELETE FROM aegis_state WHERE id = 1;

-- name: AdminRecoveryUpsert :exec
INSERT INTO admin_recovery (id, code_hash, created_at) VALUES (1, @code_hash, now())
ON CONFLICT (id) DO UPDATE SET code_hash = EXCLUDED.code_hash, created_at = now();

-- name: AdminRecoveryGet :one
SELECT * FROM admin_recovery WHERE id = 1;

-- name: AdminRecoveryDelete :exec
DELETE FROM admin_recovery WHERE id = 1;

-- name: AegisStateRekey :execrows
-- Replaces the data key (a rotation): the row is locked by this update for
-- the rest of the transaction that re-seals every stored value.
UPDATE aegis_state
SET kdf_salt = @kdf_salt, kdf_time = @kdf_time, kdf_memory_kib = @kdf_memory_kib,
    kdf_threads = @kdf_threads, wrapped_key = @wrapped_key, key_id = @new_key_id, rotated_at = now()
WHERE id = 1 AND key_id = @key_id;

-- name: SetupCodeInsert :exec
INSERT INTO setup_codes (code_hash) VALUES (@code_hash);

-- name: SetupCodeHashes :many
SELECT code_hash FROM setup_codes ORDER BY created_at DESC LIMIT 100;

-- name: SetupCodeDeleteAll :exec
DELETE FROM setup_codes;
