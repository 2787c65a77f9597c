-- Scope: @all_sites (an administrator) sees everything; anyone else sees
-- global credentials and those of sites assigned to @user_id. An optional
-- @site_id narrows the list to that site's credentials plus global ones.

-- name: CredentialList :many
SELECT c.* FROM stored_credentials c
WHERE (sqlc.narg(site_id)::bigint IS NULL OR c.site_id IS NULL OR c.site_id = sqlc.narg(site_id))
  AND (@all_sites::boolean OR c.site_id IS NULL
       OR c.site_id IN (SELECT a.site_id FROM user_site_assignments a WHERE a.user_id = @user_id))
ORDER BY lower(c.name), c.id;

-- name: CredentialGet :one
SELECT c.* FROM stored_credentials c
WHERE c.id = @id
  AND (@all_sites::boolean OR c.site_id IS NULL
       OR c.site_id IN (SELECT a.site_id FROM user_site_assignments a WHERE a.user_id = @user_id));

-- name: CredentialInsert :one
-- The row is inserted with an empty seal first: the seal's associated data
-- names the row ID, which exists only after the insert (same transaction).
INSERT INTO stored_credentials (name, connection_type, credential_type, username, domain, password_sealed, password_key_id, site_id)
VALUES (@name, @connection_type, @credential_type, @username, @domain, '\x', '\x', sqlc.narg(site_id))
RETURNING *;

-- name: CredentialUpdate :one
UPDATE stored_credentials
SET name = @name, connection_type = @connection_type, credential_type = @credential_type,
    username = @username, domain = @domain, site_id = sqlc.narg(site_id), updated_at = now()
WHERE id = @id
RETURNING *;

-- name: CredentialSetPassword :exec
UPDATE stored_credentials SET password_sealed = @password_sealed, password_key_id = @password_key_id
WHERE id = @id;

-- name: CredentialDelete :execrows
DELETE FROM stored_credentials WHERE id = @id;

-- name: CredentialSiteExists :one
SELECT EXISTS (SELECT 1 FROM sites WHERE id = @id);
