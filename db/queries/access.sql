-- name: UserList :many
SELECT u.id, u.username, u.role, u.auth_source, u.mfa_required, u.mfa_confirmed, u.recovery_required,
       u.created_at, u.last_login_at,
       coalesce(array_agg(a.site_id ORDER BY a.site_id) FILTER (WHERE a.site_id IS NOT NULL), '{}')::bigint[] AS site_ids
FROM users u LEFT JOIN user_site_assignments a ON a.user_id = u.id
GROUP BY u.id
ORDER BY u.username;

-- name: UserGetManyByUsername :many
SELECT * FROM users WHERE username = ANY(@usernames::text[]) ORDER BY username;

-- name: UserDelete :exec
DELETE FROM users WHERE id = @id;

-- name: UserSetRole :exec
UPDATE users SET role = @role, updated_at = now() WHERE id = @id;

-- name: UserActiveAdminIDsForUpdate :many
-- Locks the active administrators, so two requests cannot each remove "the
-- other" last admin at the same time.
SELECT id FROM users
WHERE role = 'admin' AND activated_at IS NOT NULL AND NOT recovery_required
ORDER BY id
FOR UPDATE;

-- name: UserSiteIDs :many
SELECT site_id FROM user_site_assignments WHERE user_id = @user_id ORDER BY site_id;

-- name: UserSiteAssignmentsByUsers :many
SELECT u.username, a.site_id
FROM users u JOIN user_site_assignments a ON a.user_id = u.id
WHERE u.username = ANY(@usernames::text[])
ORDER BY u.username, a.site_id;

-- name: UserSiteAssignmentDeleteByUsers :exec
DELETE FROM user_site_assignments WHERE user_id = ANY(@user_ids::bigint[]);

-- name: UserSiteAssignmentInsertMany :exec
INSERT INTO user_site_assignments (user_id, site_id)
SELECT u, s FROM unnest(@user_ids::bigint[]) AS u CROSS JOIN unnest(@site_ids::bigint[]) AS s;

-- name: SiteCountByIDs :one
SELECT count(*) FROM sites WHERE id = ANY(@ids::bigint[]);

-- name: AuditInsert :exec
INSERT INTO audit_log (username, role, action, target, client_addr, status, outcome, request_id, api_token_id)
VALUES (@username, @role, @action, @target, @client_addr, @status, @outcome, @request_id, sqlc.narg('api_token_id'));

-- name: AuditList :many
SELECT * FROM audit_log
WHERE (@before_id::bigint = 0 OR id < @before_id::bigint)
  AND (@username::text = '' OR username = @username::text)
ORDER BY id DESC
LIMIT @max_rows::int;
