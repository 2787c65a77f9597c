-- name: OperatorStreamInsert :exec
INSERT INTO operator_streams (id, replica_id, user_id, username) VALUES (@id, @replica_id, @user_id, @username);

-- name: OperatorStreamDelete :exec
DELETE FROM operator_streams WHERE id = @id;

-- name: OperatorStreamTouchReplica :exec
UPDATE operator_streams SET seen_at = now() WHERE replica_id = @replica_id;

-- name: OperatorStreamDeleteStale :execrows
DELETE FROM operator_streams WHERE seen_at < @before;

-- name: OperatorPresenceList :many
SELECT username, count(*) AS streams, min(connected_at)::timestamptz AS since
FROM operator_streams GROUP BY username ORDER BY username;

-- name: OperatorStreamLockUser :exec
-- Serializes opening one operator's streams across replicas, so the cap
-- on streams per operator holds (two-key lock: its own key space).
SELECT pg_advisory_xact_lock(hashtext('cairn.operator_streams'), hashtext((@user_id::bigint)::text));

-- name: OperatorStreamCountByUser :one
SELECT count(*) FROM operator_streams WHERE user_id = @user_id AND seen_at >= @live_since;
