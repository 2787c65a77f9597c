-- name: ClusterMemberUpsert :exec
INSERT INTO cluster_members (member_id, role, name, version, sites, url, admission_id, started_at, seen_at)
VALUES (@member_id, @role, @name, @version, @sites, @url, sqlc.narg(admission_id), @started_at, now())
ON CONFLICT (member_id) DO UPDATE SET version = EXCLUDED.version, sites = EXCLUDED.sites, url = EXCLUDED.url,
    admission_id = EXCLUDED.admission_id, seen_at = now();

-- name: ClusterMemberList :many
SELECT *, (seen_at > now() - make_interval(secs => @fresh_seconds::float8))::bool AS live
FROM cluster_members ORDER BY role, name, member_id;

-- name: ClusterMemberDeleteStale :execrows
DELETE FROM cluster_members WHERE seen_at < now() - make_interval(secs => @stale_seconds::float8);

-- name: ClusterJoinCodeInsert :one
INSERT INTO cluster_join_codes (id, code_hash, role, created_by, expires_at)
VALUES (@id, @code_hash, @role, @created_by, @expires_at)
RETURNING *;

-- name: ClusterJoinCodeUse :one
-- Spends a join code once, while it is valid.
UPDATE cluster_join_codes SET used_at = @at
WHERE code_hash = @code_hash AND used_at IS NULL AND expires_at > @at
RETURNING *;

-- name: ClusterAdmissionInsert :one
INSERT INTO cluster_admissions (id, join_code_id, role, name, sites, version, public_key, token_hash, expires_at)
VALUES (@id, @join_code_id, @role, @name, @sites, @version, @public_key, @token_hash, @expires_at)
RETURNING *;

-- name: ClusterAdmissionGet :one
SELECT * FROM cluster_admissions WHERE id = @id;

-- name: ClusterAdmissionList :many
SELECT * FROM cluster_admissions
WHERE state = 'pending' OR requested_at > now() - interval '7 days'
ORDER BY requested_at DESC, id LIMIT 200;

-- name: ClusterAdmissionSettle :one
-- Records a decision on a pending admission; no row when it was settled.
UPDATE cluster_admissions SET state = @state, decided_at = @at, decided_by = @actor,
    internal_key_id = sqlc.narg(internal_key_id), handoff_box = sqlc.narg(handoff_box)
WHERE id = @id AND state = 'pending'
RETURNING *;

-- name: ClusterAdmissionDelivered :exec
-- The joiner read its handoff: the box is not kept.
UPDATE cluster_admissions SET handoff_box = NULL, delivered_at = @at WHERE id = @id AND handoff_box IS NOT NULL;

-- name: ClusterEventInsert :one
INSERT INTO cluster_events (kind, admission_id, actor, message)
VALUES (@kind, sqlc.narg(admission_id), @actor, @message)
RETURNING *;

-- name: ClusterEventList :many
SELECT * FROM cluster_events WHERE id > @after ORDER BY id DESC LIMIT @max_rows;

-- name: ClusterEventListForAdmission :many
SELECT * FROM cluster_events WHERE admission_id = @admission_id AND id > @after ORDER BY id;

-- name: ClusterPostgresRole :one
SELECT pg_is_in_recovery()::bool AS in_recovery, current_setting('server_version')::text AS version;

-- name: ClusterMemberDelete :exec
DELETE FROM cluster_members WHERE member_id = @member_id;
