-- name: ScriptKeyList :many
-- Active and previous keys, the active one first.
SELECT * FROM script_signing_keys WHERE state IN ('active', 'previous')
ORDER BY state = 'active' DESC, created_at DESC;

-- name: ScriptKeyActive :one
SELECT * FROM script_signing_keys WHERE state = 'active';

-- name: ScriptKeyInsertActive :execrows
-- Does nothing when another process made an active key first.
INSERT INTO script_signing_keys (key_id, public_key, private_sealed, sealed_key_id, state)
VALUES (@key_id, @public_key, @private_sealed, @sealed_key_id, 'active')
ON CONFLICT DO NOTHING;

-- name: ScriptKeyRetirePrevious :exec
UPDATE script_signing_keys SET state = 'retired', retired_at = now() WHERE state = 'previous';

-- name: ScriptKeyDemoteActive :execrows
UPDATE script_signing_keys SET state = 'previous' WHERE state = 'active' AND key_id = @key_id;

-- name: ScriptTrustReport :exec
INSERT INTO device_script_trust (device_guid, key_ids, reported_at)
VALUES (@device_guid, @key_ids, now())
ON CONFLICT (device_guid) DO UPDATE SET key_ids = EXCLUDED.key_ids, reported_at = now();

-- name: ScriptTrustCounts :one
-- Agents that can run devices' scripts (active trust) and those of them
-- that reported trusting the active key.
SELECT count(*) AS total,
       count(*) FILTER (WHERE t.key_ids @> ARRAY[@active_key_id::text]) AS on_current
FROM devices d LEFT JOIN device_script_trust t ON t.device_guid = d.guid
WHERE d.trust_state = 'active';

-- name: ScheduledJobSignedStale :many
-- Scheduled jobs whose saved content another key signed: a rotation signs
-- them again so they outlive the key that signed them.
SELECT id, signed FROM scheduled_jobs
WHERE signed IS NOT NULL AND signed->>'key_id' IS DISTINCT FROM @key_id::text
ORDER BY id;

-- name: ScheduledJobSignedUpdate :exec
UPDATE scheduled_jobs SET signed = @signed WHERE id = @id;

-- name: JobRunResultSignedStale :many
-- Payloads not delivered yet (queued for an offline device, or about to
-- be sent) that another key signed.
SELECT run_id, device_guid, signed FROM job_run_results
WHERE signed IS NOT NULL AND status IN ('pending', 'running')
  AND signed->>'key_id' IS DISTINCT FROM @key_id::text
ORDER BY run_id, device_guid;

-- name: JobRunResultSignedUpdate :exec
UPDATE job_run_results SET signed = @signed WHERE run_id = @run_id AND device_guid = @device_guid;

-- name: ScriptKeyLinkList :many
-- The signed key-chain links, oldest first.
SELECT seq, signed FROM script_key_links ORDER BY seq;

-- name: ScriptKeyLinkNextSeq :one
SELECT (COALESCE(max(seq), 0) + 1)::bigint AS seq FROM script_key_links;

-- name: ScriptKeyLinkInsert :exec
INSERT INTO script_key_links (seq, signed) VALUES (@seq, @signed);
