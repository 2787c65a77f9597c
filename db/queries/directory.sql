-- name: DirectoryProviderList :many
SELECT sqlc.embed(p), (SELECT count(*) FROM users u WHERE u.directory_provider_id = p.id) AS cached_users
FROM directory_providers p ORDER BY lower(p.name), p.id;

-- name: DirectoryProviderGet :one
SELECT sqlc.embed(p), (SELECT count(*) FROM users u WHERE u.directory_provider_id = p.id) AS cached_users
FROM directory_providers p WHERE p.id = @id;

-- name: DirectoryProviderListEnabled :many
SELECT * FROM directory_providers WHERE enabled ORDER BY id;

-- name: DirectoryProviderInsert :one
INSERT INTO directory_providers (name, kind, host, port, base_dn, user_filter, username_attribute, group_mode,
    group_base_dn, group_member_attribute, bind_dn, ca_pem, host_overrides, role_mappings, site_mappings)
VALUES (@name, @kind, @host, @port, @base_dn, @user_filter, @username_attribute, @group_mode,
    @group_base_dn, @group_member_attribute, @bind_dn, @ca_pem, @host_overrides, @role_mappings, @site_mappings)
RETURNING id;

-- name: DirectoryProviderUpdate :exec
-- reset_test clears the test result (and so enablement) after a change of
-- connection settings.
UPDATE directory_providers SET name = @name, kind = @kind, host = @host, port = @port, base_dn = @base_dn,
    user_filter = @user_filter, username_attribute = @username_attribute, group_mode = @group_mode,
    group_base_dn = @group_base_dn, group_member_attribute = @group_member_attribute, bind_dn = @bind_dn,
    ca_pem = @ca_pem, host_overrides = @host_overrides, role_mappings = @role_mappings, site_mappings = @site_mappings,
    enabled = CASE WHEN @reset_test::bool THEN false ELSE @enabled::bool END,
    last_test_ok = CASE WHEN @reset_test::bool THEN NULL ELSE last_test_ok END,
    last_test_message = CASE WHEN @reset_test::bool THEN '' ELSE last_test_message END,
    last_test_at = CASE WHEN @reset_test::bool THEN NULL ELSE last_test_at END,
    updated_at = now()
WHERE id = @id;

-- name: DirectoryProviderSetBindPassword :exec
UPDATE directory_providers SET bind_password_sealed = @bind_password_sealed, updated_at = now() WHERE id = @id;

-- name: DirectoryProviderRecordTest :exec
-- A failed test also disables the provider: its settings no longer work.
UPDATE directory_providers SET last_test_ok = @ok, last_test_message = @message, last_test_at = now(),
    enabled = enabled AND @ok::bool
WHERE id = @id;

-- name: DirectoryProviderDelete :execrows
DELETE FROM directory_providers p WHERE p.id = @id
    AND NOT EXISTS (SELECT 1 FROM users u WHERE u.directory_provider_id = p.id);

-- name: DirectoryUserUpsert :one
-- Creates or refreshes a cached directory account at sign-in. A local
-- account of the same name is never taken over (no row is returned).
INSERT INTO users (username, role, auth_source, directory_provider_id, directory_dn, activated_at)
VALUES (lower(@username::text), @role, 'directory', @provider_id, @dn, now())
ON CONFLICT (username) DO UPDATE SET role = excluded.role, directory_provider_id = excluded.directory_provider_id,
    directory_dn = excluded.directory_dn, updated_at = now()
WHERE users.auth_source = 'directory'
RETURNING *;

-- name: DirectoryUserSiteClear :exec
DELETE FROM user_site_assignments WHERE user_id = @user_id;

-- name: DirectoryUserSiteAssign :exec
-- Site IDs of mappings whose site was since deleted are skipped.
INSERT INTO user_site_assignments (user_id, site_id)
SELECT @user_id, s.id FROM sites s WHERE s.id = ANY(@site_ids::bigint[])
ON CONFLICT DO NOTHING;

-- name: DirectoryUserListByProvider :many
SELECT * FROM users WHERE directory_provider_id = @provider_id ORDER BY username;

-- name: DirectoryUserSetDisabled :one
UPDATE users SET directory_disabled = @disabled, updated_at = now()
WHERE username = lower(@username::text) AND auth_source = 'directory'
RETURNING id;

-- name: DirectorySiteList :many
SELECT id, name, slug FROM sites ORDER BY lower(name), id;
