-- name: TemporalPayloadKeyGet :one
SELECT * FROM temporal_payload_keys WHERE id = @id;

-- name: TemporalPayloadKeyGetByDataKey :one
SELECT * FROM temporal_payload_keys WHERE data_key_id = @data_key_id;

-- name: TemporalPayloadKeyInsert :exec
-- The key of the current data key; replicas racing here read back the winner.
INSERT INTO temporal_payload_keys (id, key_sealed, data_key_id) VALUES (@id, @key_sealed, @data_key_id)
ON CONFLICT (data_key_id) DO NOTHING;

-- name: TemporalPayloadKeySealedList :many
SELECT id, key_sealed FROM temporal_payload_keys ORDER BY id FOR UPDATE;

-- name: TemporalPayloadKeySealedUpdate :exec
UPDATE temporal_payload_keys SET key_sealed = @key_sealed WHERE id = @id;
